//! Go's `fmt` printing (`Sprint`, `Sprintln`, `Sprintf`) over template
//! [`Value`]s, with the parts of `strconv` it rests on (`FormatFloat`,
//! `Quote`, `QuoteRune`, `IsPrint`).
//!
//! Every chart's `printf`, `print`, `toString` and `quote` goes through this
//! module, so it follows Go's output byte for byte: verbs apply element-wise
//! inside lists and maps, flags and widths apply to each element, and the
//! error forms (`%!d(string=hi)`, `%!(EXTRA int=1)`, `%!d(MISSING)`, ...) are
//! Go's. The structure mirrors Go's printer (a flag set, `printArg` for an
//! operand, `printValue` for nested elements) because many of Go's quirks
//! come from exactly where each flag is consulted.

use crate::value::{Kind, UintKind, Value};

/// Go's `fmt.Sprint`: operands formatted with `%v`, with a space between two
/// operands when neither of them is a string.
pub fn sprint(args: &[Value]) -> String {
    let mut p = Printer::new();
    let mut prev_string = false;
    for (n, arg) in args.iter().enumerate() {
        let is_string = !arg.is_nil() && arg.kind() == Kind::String;
        if n > 0 && !is_string && !prev_string {
            p.buf.push(' ');
        }
        p.print_arg(arg, 'v');
        prev_string = is_string;
    }
    p.buf
}

/// Go's `fmt.Sprintln`: operands formatted with `%v`, always separated by a
/// space, followed by a newline.
pub fn sprintln(args: &[Value]) -> String {
    let mut p = Printer::new();
    for (n, arg) in args.iter().enumerate() {
        if n > 0 {
            p.buf.push(' ');
        }
        p.print_arg(arg, 'v');
    }
    p.buf.push('\n');
    p.buf
}

/// Go's `fmt.Sprintf`.
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut p = Printer::new();
    p.do_printf(format, args);
    // `%s%s` may join two halves of a character back into one.
    match crate::gostr::canonical(&p.buf) {
        std::borrow::Cow::Borrowed(_) => p.buf,
        std::borrow::Cow::Owned(joined) => joined,
    }
}

/// Exactly what `%v` prints for one value (`fmt.Sprint(v)`).
pub fn format_value(v: &Value) -> String {
    let mut p = Printer::new();
    p.print_arg(v, 'v');
    p.buf
}

/// Go's `strconv.FormatFloat(f, fmt, prec, 64)` for `fmt` in `b'e'`, `b'E'`,
/// `b'f'`, `b'g'`, `b'G'`, `b'x'`, `b'X'` and `b'b'`; a negative `prec` asks
/// for the shortest representation that reads back to the same float.
pub fn format_float(f: f64, fmt: u8, prec: i32) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    let neg = f.is_sign_negative();
    match fmt {
        b'b' | b'x' | b'X' => return format_float_binary(f, fmt, prec),
        b'e' | b'E' | b'f' | b'g' | b'G' => {}
        other => return format!("%{}", other as char),
    }
    let a = f.abs();
    // Go's fmt never asks for more than a million digits; the cap keeps an
    // absurd direct request from exhausting memory.
    let mut prec = prec.min(1_000_000);
    let shortest = prec < 0;
    let digs = if shortest {
        let d = parse_exp_form(&format!("{a:e}"));
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
    let mut out = String::new();
    match fmt {
        b'e' | b'E' => fmt_e(&mut out, neg, &digs, prec, fmt),
        b'f' => fmt_f(&mut out, neg, &digs, prec),
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
                fmt_e(&mut out, neg, &digs, prec - 1, fmt + b'e' - b'g');
            } else {
                if prec > digs.dp {
                    prec = digs.nd();
                }
                fmt_f(&mut out, neg, &digs, (prec - digs.dp).max(0));
            }
        }
    }
    out
}

/// Go's `strconv.Quote`: a double-quoted Go string literal; printable runes
/// are kept, others escaped (`\n`, `\x00`, `\u00ad`, `\U0001f000`).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    append_quoted(&mut out, &crate::gostr::to_bytes(s), '"', false);
    out
}

/// Go's `strconv.QuoteToASCII`: like [`quote`], but every non-ASCII rune is
/// escaped too.
pub fn quote_to_ascii(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    append_quoted(&mut out, &crate::gostr::to_bytes(s), '"', true);
    out
}

/// Go's `strconv.QuoteRune`: a single-quoted Go character literal.
pub fn quote_rune(c: char) -> String {
    let mut out = String::new();
    out.push('\'');
    append_escaped_rune(&mut out, c, '\'', false);
    out.push('\'');
    out
}

/// Go's `strconv.QuoteRuneToASCII`.
pub fn quote_rune_to_ascii(c: char) -> String {
    let mut out = String::new();
    out.push('\'');
    append_escaped_rune(&mut out, c, '\'', true);
    out.push('\'');
    out
}

/// Go's `strconv.CanBackquote`: whether `s` can be written as a raw string
/// literal.
pub fn can_backquote(s: &str) -> bool {
    can_backquote_bytes(s.as_bytes())
}

/// Go's `unicode.IsPrint` (equally `strconv.IsPrint`): letters, marks,
/// numbers, punctuation, symbols and the ASCII space.
pub fn is_print(c: char) -> bool {
    let r = c as u32;
    if r < 0x80 {
        return (0x20..0x7f).contains(&r);
    }
    PRINT_RANGES
        .binary_search_by(|&(lo, hi)| {
            if hi < r {
                std::cmp::Ordering::Less
            } else if lo > r {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

// ---------------------------------------------------------------------------
// The printer.

const NIL_ANGLE: &str = "<nil>";

/// Recursion guard for printing nested values. Go has none and would crash
/// on a map that contains itself (`set $d "self" $d`); we stop instead of
/// overflowing the stack.
const MAX_DEPTH: usize = 500;

#[derive(Clone, Copy, Default)]
struct Flags {
    wid_present: bool,
    prec_present: bool,
    minus: bool,
    plus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    // %+v and %#v are separate formats applied at the top level; Go clears
    // plus/sharp for them and records them here.
    plus_v: bool,
    sharp_v: bool,
}

struct Printer {
    buf: String,
    fl: Flags,
    wid: i64,
    prec: i64,
    erroring: bool,
    reordered: bool,
    good_arg_num: bool,
}

impl Printer {
    fn new() -> Self {
        Printer {
            buf: String::new(),
            fl: Flags::default(),
            wid: 0,
            prec: 0,
            erroring: false,
            reordered: false,
            good_arg_num: true,
        }
    }

    fn clear_flags(&mut self) {
        self.fl = Flags::default();
        self.wid = 0;
        self.prec = 0;
    }

    // -- Sprintf's format parser ------------------------------------------

    fn do_printf(&mut self, format: &str, a: &[Value]) {
        let fb = format.as_bytes();
        let end = fb.len();
        let mut arg_num = 0usize;
        let mut after_index;
        self.reordered = false;
        let mut i = 0usize;
        'format: while i < end {
            self.good_arg_num = true;
            let lasti = i;
            while i < end && fb[i] != b'%' {
                i += 1;
            }
            if i > lasti {
                self.buf.push_str(&format[lasti..i]);
            }
            if i >= end {
                break;
            }
            i += 1;
            self.clear_flags();
            while i < end {
                let c = fb[i];
                match c {
                    b'#' => self.fl.sharp = true,
                    // Zero padding only ever applies on the left.
                    b'0' => self.fl.zero = !self.fl.minus,
                    b'+' => self.fl.plus = true,
                    b'-' => {
                        self.fl.minus = true;
                        self.fl.zero = false;
                    }
                    b' ' => self.fl.space = true,
                    _ => {
                        // Go's fast path: flags then a lower-case verb.
                        if c.is_ascii_lowercase() && arg_num < a.len() {
                            if c == b'v' || c == b'w' {
                                self.set_v_flags();
                            }
                            self.print_arg(&a[arg_num], c as char);
                            arg_num += 1;
                            i += 1;
                            continue 'format;
                        }
                        break;
                    }
                }
                i += 1;
            }

            (arg_num, i, after_index) = self.arg_number(arg_num, fb, i, a.len());

            if i < end && fb[i] == b'*' {
                i += 1;
                let (w, ok, n) = int_from_arg(a, arg_num);
                self.wid = w;
                self.fl.wid_present = ok;
                arg_num = n;
                if !ok {
                    self.buf.push_str("%!(BADWIDTH)");
                }
                if self.wid < 0 {
                    self.wid = -self.wid;
                    self.fl.minus = true;
                    self.fl.zero = false;
                }
                after_index = false;
            } else {
                let (w, ok, ni) = parse_num(fb, i, end);
                self.wid = w;
                self.fl.wid_present = ok;
                i = ni;
                if after_index && self.fl.wid_present {
                    self.good_arg_num = false;
                }
            }

            if i + 1 < end && fb[i] == b'.' {
                i += 1;
                if after_index {
                    self.good_arg_num = false;
                }
                (arg_num, i, after_index) = self.arg_number(arg_num, fb, i, a.len());
                if i < end && fb[i] == b'*' {
                    i += 1;
                    let (p, ok, n) = int_from_arg(a, arg_num);
                    self.prec = p;
                    self.fl.prec_present = ok;
                    arg_num = n;
                    if self.prec < 0 {
                        self.prec = 0;
                        self.fl.prec_present = false;
                    }
                    if !self.fl.prec_present {
                        self.buf.push_str("%!(BADPREC)");
                    }
                    after_index = false;
                } else {
                    let (p, ok, ni) = parse_num(fb, i, end);
                    self.prec = p;
                    self.fl.prec_present = ok;
                    i = ni;
                    if !self.fl.prec_present {
                        self.prec = 0;
                        self.fl.prec_present = true;
                    }
                }
            }

            if !after_index {
                (arg_num, i, _) = self.arg_number(arg_num, fb, i, a.len());
            }

            if i >= end {
                self.buf.push_str("%!(NOVERB)");
                break;
            }

            let verb = format[i..].chars().next().unwrap_or('?');
            i += verb.len_utf8();

            if verb == '%' {
                // A literal percent takes no operand and ignores width and
                // precision.
                self.buf.push('%');
            } else if !self.good_arg_num {
                self.push_verb_error(verb, "(BADINDEX)");
            } else if arg_num >= a.len() {
                self.push_verb_error(verb, "(MISSING)");
            } else {
                if verb == 'v' || verb == 'w' {
                    self.set_v_flags();
                }
                self.print_arg(&a[arg_num], verb);
                arg_num += 1;
            }
        }

        // Extra operands are reported unless the format reordered its
        // operands, where Go does not try to tell which were used.
        if !self.reordered && arg_num < a.len() {
            self.clear_flags();
            self.buf.push_str("%!(EXTRA ");
            for (k, arg) in a[arg_num..].iter().enumerate() {
                if k > 0 {
                    self.buf.push_str(", ");
                }
                if arg.is_nil() {
                    self.buf.push_str(NIL_ANGLE);
                } else {
                    self.buf.push_str(&arg.type_name());
                    self.buf.push('=');
                    self.print_arg(arg, 'v');
                }
            }
            self.buf.push(')');
        }
    }

    fn set_v_flags(&mut self) {
        self.fl.sharp_v = self.fl.sharp;
        self.fl.sharp = false;
        self.fl.plus_v = self.fl.plus;
        self.fl.plus = false;
    }

    fn push_verb_error(&mut self, verb: char, what: &str) {
        self.buf.push_str("%!");
        self.buf.push(verb);
        self.buf.push_str(what);
    }

    /// An explicit argument index `[n]` at `i`, if there is one.
    fn arg_number(
        &mut self,
        arg_num: usize,
        fb: &[u8],
        i: usize,
        num_args: usize,
    ) -> (usize, usize, bool) {
        if fb.len() <= i || fb[i] != b'[' {
            return (arg_num, i, false);
        }
        self.reordered = true;
        let (index, wid, ok) = parse_arg_number(&fb[i..]);
        if ok && index >= 0 && (index as usize) < num_args {
            return (index as usize, i + wid, true);
        }
        self.good_arg_num = false;
        (arg_num, i + wid, ok)
    }

    // -- Operands -----------------------------------------------------------

    fn bad_verb(&mut self, verb: char, arg: Option<&Value>) {
        self.erroring = true;
        self.buf.push_str("%!");
        self.buf.push(verb);
        self.buf.push('(');
        match arg {
            Some(v) if !v.is_nil() => {
                self.buf.push_str(&v.type_name());
                self.buf.push('=');
                self.print_arg(v, 'v');
            }
            _ => self.buf.push_str(NIL_ANGLE),
        }
        self.buf.push(')');
        self.erroring = false;
    }

    /// Go's `printArg`: one top-level operand.
    fn print_arg(&mut self, arg: &Value, verb: char) {
        if arg.is_nil() {
            match verb {
                'T' | 'v' => self.pad(NIL_ANGLE),
                _ => self.bad_verb(verb, None),
            }
            return;
        }
        match verb {
            'T' => {
                let t = arg.type_name();
                self.fmt_s(&t);
                return;
            }
            'p' => {
                self.fmt_pointer(arg, 'p');
                return;
            }
            _ => {}
        }
        match arg {
            Value::Bool(b) => self.fmt_bool(*b, verb, arg),
            Value::Int(i, _) => self.fmt_integer_verb(*i as u64, true, verb, arg),
            Value::Uint(u, _) => self.fmt_integer_verb(*u, false, verb, arg),
            Value::Float(f) => self.fmt_float_verb(*f, verb, arg),
            Value::Complex(re, im) => self.fmt_complex(*re, *im, verb, arg),
            Value::String(s) => self.fmt_string(s, verb, arg),
            Value::Bytes(b) => self.fmt_bytes(b, verb, "[]byte"),
            Value::Object(_) => self.print_value(arg, verb, 0),
            Value::List(_) | Value::Map(_) | Value::Func(_) => {
                // Composite operands go through Go's method check first,
                // where %w on a non-error reports the whole operand.
                if verb == 'w' {
                    self.bad_verb(verb, Some(arg));
                } else {
                    self.print_value(arg, verb, 0);
                }
            }
            Value::Invalid | Value::Nil => {}
        }
    }

    /// Go's `printValue`: an operand reached by reflection, e.g. a list
    /// element or a map entry (`depth > 0`).
    fn print_value(&mut self, v: &Value, verb: char, depth: usize) {
        if depth > MAX_DEPTH {
            self.buf.push_str("...");
            return;
        }
        if depth > 0 && verb == 'w' && !v.is_nil() {
            self.bad_verb(verb, Some(v));
            return;
        }
        match v {
            Value::Invalid | Value::Nil => {
                // A nil interface inside a container.
                if self.fl.sharp_v {
                    self.buf.push_str("interface {}(nil)");
                } else {
                    self.buf.push_str(NIL_ANGLE);
                }
            }
            Value::Bool(b) => self.fmt_bool(*b, verb, v),
            Value::Int(i, _) => self.fmt_integer_verb(*i as u64, true, verb, v),
            Value::Uint(u, _) => self.fmt_integer_verb(*u, false, verb, v),
            Value::Float(f) => self.fmt_float_verb(*f, verb, v),
            Value::Complex(re, im) => self.fmt_complex(*re, *im, verb, v),
            Value::String(s) => self.fmt_string(s, verb, v),
            Value::Bytes(b) => self.print_byte_slice(b, verb, depth),
            Value::List(l) => {
                if self.fl.sharp_v {
                    self.buf.push_str(l.kind().go_name());
                    self.buf.push('{');
                    for (i, e) in l.iter().enumerate() {
                        if i > 0 {
                            self.buf.push_str(", ");
                        }
                        self.print_value(e, verb, depth + 1);
                    }
                    self.buf.push('}');
                } else {
                    self.buf.push('[');
                    for (i, e) in l.iter().enumerate() {
                        if i > 0 {
                            self.buf.push(' ');
                        }
                        self.print_value(e, verb, depth + 1);
                    }
                    self.buf.push(']');
                }
            }
            Value::Map(m) => {
                if self.fl.sharp_v {
                    self.buf.push_str(m.kind().go_name());
                    self.buf.push('{');
                } else {
                    self.buf.push_str("map[");
                }
                // A snapshot, so printing never holds a borrow of the map.
                for (i, (k, val)) in m.entries().iter().enumerate() {
                    if i > 0 {
                        if self.fl.sharp_v {
                            self.buf.push_str(", ");
                        } else {
                            self.buf.push(' ');
                        }
                    }
                    self.print_value(&Value::str(k), verb, depth + 1);
                    self.buf.push(':');
                    self.print_value(val, verb, depth + 1);
                }
                self.buf.push(if self.fl.sharp_v { '}' } else { ']' });
            }
            Value::Object(o) => {
                if self.erroring {
                    let s = o.format_v();
                    self.buf.push_str(&s);
                    return;
                }
                if verb == 'w' {
                    self.bad_verb(verb, Some(v));
                    return;
                }
                if self.fl.sharp_v {
                    let s = o.format_sharp_v();
                    self.fmt_s(&s);
                    return;
                }
                match verb {
                    'v' => {
                        let s = if self.fl.plus_v {
                            o.format_plus_v()
                        } else {
                            o.format_v()
                        };
                        self.fmt_s(&s);
                    }
                    's' | 'x' | 'X' | 'q' => {
                        let s = o.format_v();
                        self.fmt_string(&s, verb, v);
                    }
                    _ => self.bad_verb(verb, Some(v)),
                }
            }
            Value::Func(_) => self.fmt_pointer(v, verb),
        }
    }

    /// A `[]uint8` reached by reflection (nested, or a verb `fmtBytes` does
    /// not handle itself).
    fn print_byte_slice(&mut self, b: &[u8], verb: char, depth: usize) {
        if matches!(verb, 's' | 'q' | 'x' | 'X') {
            self.fmt_bytes(b, verb, "[]uint8");
            return;
        }
        let (open, sep, close) = if self.fl.sharp_v {
            ("[]uint8{", ", ", "}")
        } else {
            ("[", " ", "]")
        };
        self.buf.push_str(open);
        for (i, c) in b.iter().enumerate() {
            if i > 0 {
                self.buf.push_str(sep);
            }
            self.print_value(&Value::Uint(*c as u64, UintKind::Uint8), verb, depth + 1);
        }
        self.buf.push_str(close);
    }

    fn fmt_bool(&mut self, b: bool, verb: char, arg: &Value) {
        match verb {
            't' | 'v' => self.pad(if b { "true" } else { "false" }),
            _ => self.bad_verb(verb, Some(arg)),
        }
    }

    /// Go's `pp.fmtInteger`: `v` holds the two's complement bits for signed
    /// kinds.
    fn fmt_integer_verb(&mut self, v: u64, signed: bool, verb: char, arg: &Value) {
        match verb {
            'v' => {
                if self.fl.sharp_v && !signed {
                    self.fmt_0x64(v, true);
                } else {
                    self.fmt_integer(v, 10, signed, verb, false);
                }
            }
            'd' => self.fmt_integer(v, 10, signed, verb, false),
            'b' => self.fmt_integer(v, 2, signed, verb, false),
            'o' | 'O' => self.fmt_integer(v, 8, signed, verb, false),
            'x' => self.fmt_integer(v, 16, signed, verb, false),
            'X' => self.fmt_integer(v, 16, signed, verb, true),
            'c' => self.fmt_c(v),
            'q' => self.fmt_qc(v),
            'U' => self.fmt_unicode(v),
            _ => self.bad_verb(verb, Some(arg)),
        }
    }

    fn fmt_0x64(&mut self, v: u64, leading_0x: bool) {
        let sharp = self.fl.sharp;
        self.fl.sharp = leading_0x;
        self.fmt_integer(v, 16, false, 'v', false);
        self.fl.sharp = sharp;
    }

    /// Go's `pp.fmtFloat`: the verb picks the strconv format and its
    /// default precision.
    fn fmt_float_verb(&mut self, f: f64, verb: char, arg: &Value) {
        match verb {
            'v' => self.fmt_float(f, b'g', -1),
            'b' | 'g' | 'G' | 'x' | 'X' => self.fmt_float(f, verb as u8, -1),
            'f' | 'e' | 'E' => self.fmt_float(f, verb as u8, 6),
            'F' => self.fmt_float(f, b'f', 6),
            _ => self.bad_verb(verb, Some(arg)),
        }
    }

    fn fmt_complex(&mut self, re: f64, im: f64, verb: char, arg: &Value) {
        match verb {
            'v' | 'b' | 'g' | 'G' | 'x' | 'X' | 'f' | 'F' | 'e' | 'E' => {
                let old_plus = self.fl.plus;
                self.buf.push('(');
                self.fmt_float_verb(re, verb, arg);
                // The imaginary part always has a sign.
                self.fl.plus = true;
                self.fmt_float_verb(im, verb, arg);
                self.buf.push_str("i)");
                self.fl.plus = old_plus;
            }
            _ => self.bad_verb(verb, Some(arg)),
        }
    }

    fn fmt_string(&mut self, s: &str, verb: char, arg: &Value) {
        match verb {
            'v' => {
                if self.fl.sharp_v {
                    self.fmt_q(&crate::gostr::to_bytes(s));
                } else {
                    self.fmt_s(s);
                }
            }
            's' => self.fmt_s(s),
            'x' => self.fmt_sbx(&crate::gostr::to_bytes(s), false),
            'X' => self.fmt_sbx(&crate::gostr::to_bytes(s), true),
            'q' => self.fmt_q(&crate::gostr::to_bytes(s)),
            _ => self.bad_verb(verb, Some(arg)),
        }
    }

    fn fmt_bytes(&mut self, b: &[u8], verb: char, type_string: &str) {
        match verb {
            'v' | 'd' => {
                if self.fl.sharp_v {
                    self.buf.push_str(type_string);
                    self.buf.push('{');
                    for (i, c) in b.iter().enumerate() {
                        if i > 0 {
                            self.buf.push_str(", ");
                        }
                        self.fmt_0x64(*c as u64, true);
                    }
                    self.buf.push('}');
                } else {
                    self.buf.push('[');
                    for (i, c) in b.iter().enumerate() {
                        if i > 0 {
                            self.buf.push(' ');
                        }
                        self.fmt_integer(*c as u64, 10, false, verb, false);
                    }
                    self.buf.push(']');
                }
            }
            's' => {
                let t = truncate_bytes(b, self.fl.prec_present, self.prec);
                let s = go_string_lossy(t);
                self.pad(&s);
            }
            'x' => self.fmt_sbx(b, false),
            'X' => self.fmt_sbx(b, true),
            'q' => self.fmt_q(b),
            _ => self.print_byte_slice(b, verb, 0),
        }
    }

    fn fmt_pointer(&mut self, v: &Value, verb: char) {
        let u = match pointer_of(v) {
            Some(u) => u,
            None => {
                self.bad_verb(verb, Some(v));
                return;
            }
        };
        match verb {
            'v' => {
                if self.fl.sharp_v {
                    self.buf.push('(');
                    self.buf.push_str(&v.type_name());
                    self.buf.push_str(")(");
                    if u == 0 {
                        self.buf.push_str("nil");
                    } else {
                        self.fmt_0x64(u, true);
                    }
                    self.buf.push(')');
                } else if u == 0 {
                    self.pad(NIL_ANGLE);
                } else {
                    self.fmt_0x64(u, !self.fl.sharp);
                }
            }
            'p' => self.fmt_0x64(u, !self.fl.sharp),
            'b' | 'o' | 'd' | 'x' | 'X' => {
                let uv = Value::Uint(u, UintKind::Uintptr);
                self.fmt_integer_verb(u, false, verb, &uv);
            }
            _ => self.bad_verb(verb, Some(v)),
        }
    }

    // -- Go's `fmt` (format.go): padding and the basic formatters ------------

    fn write_padding(&mut self, n: i64) {
        if n <= 0 {
            return;
        }
        let c = if self.fl.zero { '0' } else { ' ' };
        for _ in 0..n {
            self.buf.push(c);
        }
    }

    /// Pads `s` to the width, on the left or (with `-`) on the right; the
    /// width counts runes.
    fn pad(&mut self, s: &str) {
        if !self.fl.wid_present || self.wid == 0 {
            self.buf.push_str(s);
            return;
        }
        let width = self.wid - s.chars().count() as i64;
        if !self.fl.minus {
            self.write_padding(width);
            self.buf.push_str(s);
        } else {
            self.buf.push_str(s);
            self.write_padding(width);
        }
    }

    fn fmt_s(&mut self, s: &str) {
        let s = truncate_str(s, self.fl.prec_present, self.prec);
        self.pad(s);
    }

    fn fmt_unicode(&mut self, u: u64) {
        let mut prec = 4i64;
        if self.fl.prec_present && self.prec > 4 {
            prec = self.prec;
        }
        let mut hex = format!("{u:X}");
        let mut s = String::from("U+");
        while (hex.len() as i64) < prec {
            hex.insert(0, '0');
        }
        s.push_str(&hex);
        if self.fl.sharp && u <= 0x10FFFF {
            if let Some(c) = char::from_u32(u as u32) {
                if is_print(c) {
                    s.push_str(" '");
                    s.push(c);
                    s.push('\'');
                }
            }
        }
        let old_zero = self.fl.zero;
        self.fl.zero = false;
        self.pad(&s);
        self.fl.zero = old_zero;
    }

    /// Go's `fmt.fmtInteger`.
    fn fmt_integer(&mut self, u: u64, base: u64, signed: bool, verb: char, upper: bool) {
        let negative = signed && (u as i64) < 0;
        let mut u = if negative { u.wrapping_neg() } else { u };
        let digits: &[u8; 17] = if upper {
            b"0123456789ABCDEFX"
        } else {
            b"0123456789abcdefx"
        };

        // Two ways to ask for leading zeros, %.3d and %03d; with both, the
        // precision wins and the padding is spaces.
        let mut prec = 0i64;
        if self.fl.prec_present {
            prec = self.prec;
            if prec == 0 && u == 0 {
                let old_zero = self.fl.zero;
                self.fl.zero = false;
                self.write_padding(self.wid);
                self.fl.zero = old_zero;
                return;
            }
        } else if self.fl.zero && self.fl.wid_present {
            prec = self.wid;
            if negative || self.fl.plus || self.fl.space {
                prec -= 1;
            }
        }

        // Built right to left, then reversed.
        let mut rev: Vec<u8> = Vec::with_capacity(24);
        loop {
            rev.push(digits[(u % base) as usize]);
            u /= base;
            if u == 0 {
                break;
            }
        }
        while (rev.len() as i64) < prec {
            rev.push(b'0');
        }
        if self.fl.sharp {
            match base {
                2 => rev.extend_from_slice(b"b0"),
                8 if rev.last() != Some(&b'0') => rev.push(b'0'),
                16 => {
                    rev.push(digits[16]);
                    rev.push(b'0');
                }
                _ => {}
            }
        }
        if verb == 'O' {
            rev.extend_from_slice(b"o0");
        }
        if negative {
            rev.push(b'-');
        } else if self.fl.plus {
            rev.push(b'+');
        } else if self.fl.space {
            rev.push(b' ');
        }
        rev.reverse();
        let s = String::from_utf8_lossy(&rev).into_owned();
        let old_zero = self.fl.zero;
        self.fl.zero = false;
        self.pad(&s);
        self.fl.zero = old_zero;
    }

    /// Hex of a string or byte slice (`%x`, `% x`, `%#x`).
    fn fmt_sbx(&mut self, b: &[u8], upper: bool) {
        let digits: &[u8; 17] = if upper {
            b"0123456789ABCDEFX"
        } else {
            b"0123456789abcdefx"
        };
        let mut length = b.len() as i64;
        if self.fl.prec_present && self.prec < length {
            length = self.prec;
        }
        let mut width = 2 * length;
        if width > 0 {
            if self.fl.space {
                if self.fl.sharp {
                    width *= 2;
                }
                width += length - 1;
            } else if self.fl.sharp {
                width += 2;
            }
        } else {
            if self.fl.wid_present {
                self.write_padding(self.wid);
            }
            return;
        }
        if self.fl.wid_present && self.wid > width && !self.fl.minus {
            self.write_padding(self.wid - width);
        }
        let mut out = String::with_capacity(width as usize);
        if self.fl.sharp {
            out.push('0');
            out.push(digits[16] as char);
        }
        for (i, c) in b.iter().take(length as usize).enumerate() {
            if self.fl.space && i > 0 {
                out.push(' ');
                if self.fl.sharp {
                    out.push('0');
                    out.push(digits[16] as char);
                }
            }
            out.push(digits[(c >> 4) as usize] as char);
            out.push(digits[(c & 0xF) as usize] as char);
        }
        self.buf.push_str(&out);
        if self.fl.wid_present && self.wid > width && self.fl.minus {
            self.write_padding(self.wid - width);
        }
    }

    /// `%q` of a string or byte slice.
    fn fmt_q(&mut self, b: &[u8]) {
        let b = truncate_bytes(b, self.fl.prec_present, self.prec);
        if self.fl.sharp && can_backquote_bytes(b) {
            let s = format!("`{}`", go_string_lossy(b));
            self.pad(&s);
            return;
        }
        let mut q = String::with_capacity(b.len() + 2);
        append_quoted(&mut q, b, '"', self.fl.plus);
        self.pad(&q);
    }

    /// `%c`: the rune, or U+FFFD when the integer is not one.
    fn fmt_c(&mut self, c: u64) {
        let r = rune_of(c);
        let mut s = String::new();
        s.push(r);
        self.pad(&s);
    }

    /// `%q` of an integer: a quoted character literal.
    fn fmt_qc(&mut self, c: u64) {
        let r = rune_of(c);
        let s = if self.fl.plus {
            quote_rune_to_ascii(r)
        } else {
            quote_rune(r)
        };
        self.pad(&s);
    }

    /// Go's `fmt.fmtFloat`: strconv's text, then sign, `#` and padding.
    fn fmt_float(&mut self, v: f64, verb: u8, prec: i64) {
        let prec = if self.fl.prec_present {
            self.prec
        } else {
            prec
        };
        let s = format_float(v, verb, prec.clamp(-1, i32::MAX as i64) as i32);
        let mut num: Vec<u8> = Vec::with_capacity(s.len() + 1);
        if s.starts_with('-') || s.starts_with('+') {
            num.extend_from_slice(s.as_bytes());
        } else {
            num.push(b'+');
            num.extend_from_slice(s.as_bytes());
        }
        if self.fl.space && num[0] == b'+' && !self.fl.plus {
            num[0] = b' ';
        }
        // Infinities and NaN are not padded with zeros.
        if num.len() > 1 && (num[1] == b'I' || num[1] == b'N') {
            let old_zero = self.fl.zero;
            self.fl.zero = false;
            let start = if num[1] == b'N' && !self.fl.space && !self.fl.plus {
                1
            } else {
                0
            };
            let s = String::from_utf8_lossy(&num[start..]).into_owned();
            self.pad(&s);
            self.fl.zero = old_zero;
            return;
        }
        // '#' forces a decimal point and, for %g, keeps trailing zeros.
        if self.fl.sharp && verb != b'b' {
            let mut digits = 0i64;
            if matches!(verb, b'v' | b'g' | b'G' | b'x') {
                digits = prec;
                if digits == -1 {
                    digits = 6;
                }
            }
            let mut tail: Vec<u8> = Vec::new();
            let mut has_decimal_point = false;
            let mut saw_nonzero_digit = false;
            let mut i = 1;
            while i < num.len() {
                match num[i] {
                    b'.' => has_decimal_point = true,
                    b'p' | b'P' => {
                        tail = num.split_off(i);
                        break;
                    }
                    b'e' | b'E' if verb != b'x' && verb != b'X' => {
                        tail = num.split_off(i);
                        break;
                    }
                    c => {
                        if c != b'0' {
                            saw_nonzero_digit = true;
                        }
                        if saw_nonzero_digit {
                            digits -= 1;
                        }
                    }
                }
                i += 1;
            }
            if !has_decimal_point {
                if num.len() == 2 && num[1] == b'0' {
                    digits -= 1;
                }
                num.push(b'.');
            }
            while digits > 0 {
                num.push(b'0');
                digits -= 1;
            }
            num.extend_from_slice(&tail);
        }
        if self.fl.plus || num[0] != b'+' {
            // With zero padding the sign goes before the zeros.
            if self.fl.zero && self.fl.wid_present && self.wid > num.len() as i64 {
                self.buf.push(num[0] as char);
                self.write_padding(self.wid - num.len() as i64);
                self.buf.push_str(&String::from_utf8_lossy(&num[1..]));
                return;
            }
            let s = String::from_utf8_lossy(&num).into_owned();
            self.pad(&s);
            return;
        }
        let s = String::from_utf8_lossy(&num[1..]).into_owned();
        self.pad(&s);
    }
}

/// Go's `parsenum`: a decimal number at `fb[start..end]`. An absurdly long
/// number consumes the rest of the format.
fn parse_num(fb: &[u8], start: usize, end: usize) -> (i64, bool, usize) {
    if start >= end {
        return (0, false, end);
    }
    let mut num = 0i64;
    let mut is_num = false;
    let mut i = start;
    while i < end && fb[i].is_ascii_digit() {
        if too_large(num) {
            return (0, false, end);
        }
        num = num * 10 + (fb[i] - b'0') as i64;
        is_num = true;
        i += 1;
    }
    (num, is_num, i)
}

fn too_large(x: i64) -> bool {
    !(-1_000_000..=1_000_000).contains(&x)
}

/// Go's `parseArgNumber`: `[n]` at the start of `f`; returns the zero-based
/// index, the bytes consumed and whether it parsed.
fn parse_arg_number(f: &[u8]) -> (i64, usize, bool) {
    if f.len() < 3 {
        return (0, 1, false);
    }
    for i in 1..f.len() {
        if f[i] == b']' {
            let (width, ok, newi) = parse_num(f, 1, i);
            if !ok || newi != i {
                return (0, i + 1, false);
            }
            return (width - 1, i + 1, true);
        }
    }
    (0, 1, false)
}

/// Go's `intFromArg`: a `*` width or precision operand.
fn int_from_arg(a: &[Value], arg_num: usize) -> (i64, bool, usize) {
    if arg_num >= a.len() {
        return (0, false, arg_num);
    }
    let (num, is_int) = match &a[arg_num] {
        Value::Int(i, _) => (*i, true),
        Value::Uint(u, _) if *u <= i64::MAX as u64 => (*u as i64, true),
        _ => (0, false),
    };
    if too_large(num) {
        return (0, false, arg_num + 1);
    }
    (num, is_int, arg_num + 1)
}

/// A stand-in address for `%p` and for printing functions, shaped like a Go
/// heap pointer. `None` for values that are not pointers in Go.
fn pointer_of(v: &Value) -> Option<u64> {
    let raw = match v {
        Value::Func(f) => std::rc::Rc::as_ptr(&f.imp) as *const () as usize,
        Value::Map(m) => &*m.borrow() as *const _ as usize,
        Value::List(l) => l.items().as_ptr() as usize,
        Value::Bytes(b) => b.as_ptr() as usize,
        Value::Object(o) if o.kind() == Kind::Ptr => std::rc::Rc::as_ptr(o) as *const () as usize,
        _ => return None,
    };
    Some(0x00c0_0000_0000 | ((raw as u64) & 0x0fff_fff8))
}

/// Go's conversion of an integer operand to a rune for `%c` and `%q`.
fn rune_of(c: u64) -> char {
    if c > 0x10FFFF {
        return '\u{FFFD}';
    }
    char::from_u32(c as u32).unwrap_or('\u{FFFD}')
}

/// The first `prec` runes of `s`, when a precision is set.
fn truncate_str(s: &str, prec_present: bool, prec: i64) -> &str {
    if prec_present {
        if let Some((i, _)) = s.char_indices().nth(prec.max(0) as usize) {
            return &s[..i];
        }
    }
    s
}

/// The first `prec` runes of `b` (an invalid byte counts as one rune).
fn truncate_bytes(b: &[u8], prec_present: bool, prec: i64) -> &[u8] {
    if !prec_present {
        return b;
    }
    let mut n = prec;
    let mut i = 0;
    while i < b.len() {
        n -= 1;
        if n < 0 {
            return &b[..i];
        }
        i += decode_rune(&b[i..]).1;
    }
    b
}

/// Decodes one rune the way Go's `utf8.DecodeRune` does: `None` with width 1
/// for an invalid byte.
fn decode_rune(b: &[u8]) -> (Option<char>, usize) {
    let Some(&first) = b.first() else {
        return (None, 0);
    };
    let len = match first {
        0x00..=0x7F => return (Some(first as char), 1),
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return (None, 1),
    };
    if b.len() < len {
        return (None, 1);
    }
    match std::str::from_utf8(&b[..len]) {
        Ok(s) => (s.chars().next(), len),
        Err(_) => (None, 1),
    }
}

/// `string(b)` as far as Rust can hold it: each invalid byte becomes U+FFFD.
fn go_string_lossy(b: &[u8]) -> String {
    if let Ok(s) = std::str::from_utf8(b) {
        return s.to_string();
    }
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let (r, w) = decode_rune(&b[i..]);
        out.push(r.unwrap_or('\u{FFFD}'));
        i += w.max(1);
    }
    out
}

fn can_backquote_bytes(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        let (r, w) = decode_rune(&b[i..]);
        i += w.max(1);
        match r {
            None => return false,
            Some(c) if w > 1 => {
                // Byte order marks are invisible; everything else multibyte
                // is taken as printable.
                if c == '\u{FEFF}' {
                    return false;
                }
            }
            Some(c) => {
                if (c < ' ' && c != '\t') || c == '`' || c == '\u{7F}' {
                    return false;
                }
            }
        }
    }
    true
}

fn append_quoted(out: &mut String, s: &[u8], quote: char, ascii_only: bool) {
    out.push(quote);
    let mut i = 0;
    while i < s.len() {
        let (r, w) = decode_rune(&s[i..]);
        match r {
            Some(c) => append_escaped_rune(out, c, quote, ascii_only),
            None => {
                out.push_str("\\x");
                push_hex2(out, s[i]);
            }
        }
        i += w.max(1);
    }
    out.push(quote);
}

fn push_hex2(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(HEX[(b >> 4) as usize] as char);
    out.push(HEX[(b & 0xF) as usize] as char);
}

fn append_escaped_rune(out: &mut String, r: char, quote: char, ascii_only: bool) {
    if r == quote || r == '\\' {
        out.push('\\');
        out.push(r);
        return;
    }
    if ascii_only {
        if r.is_ascii() && is_print(r) {
            out.push(r);
            return;
        }
    } else if is_print(r) {
        out.push(r);
        return;
    }
    match r {
        '\u{07}' => out.push_str("\\a"),
        '\u{08}' => out.push_str("\\b"),
        '\u{0C}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{0B}' => out.push_str("\\v"),
        _ => {
            let v = r as u32;
            if r < ' ' || r == '\u{7F}' {
                out.push_str("\\x");
                push_hex2(out, v as u8);
            } else if v < 0x10000 {
                out.push_str(&format!("\\u{v:04x}"));
            } else {
                out.push_str(&format!("\\U{v:08x}"));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// strconv's decimal formatting.

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
fn format_float_binary(f: f64, fmt: u8, prec: i32) -> String {
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
    let mut out = String::new();
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
        return out;
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
    out
}

// ---------------------------------------------------------------------------

/// Code points at or above U+0080 that Go's `unicode.IsPrint` accepts
/// (general categories L, M, N, P and S, Unicode 15.0.0, as Go 1.26 ships),
/// as inclusive ranges.
#[rustfmt::skip]
static PRINT_RANGES: &[(u32, u32)] = &[
    (0xA1, 0xAC), (0xAE, 0x377), (0x37A, 0x37F), (0x384, 0x38A), (0x38C, 0x38C), (0x38E, 0x3A1),
    (0x3A3, 0x52F), (0x531, 0x556), (0x559, 0x58A), (0x58D, 0x58F), (0x591, 0x5C7), (0x5D0, 0x5EA),
    (0x5EF, 0x5F4), (0x606, 0x61B), (0x61D, 0x6DC), (0x6DE, 0x70D), (0x710, 0x74A), (0x74D, 0x7B1),
    (0x7C0, 0x7FA), (0x7FD, 0x82D), (0x830, 0x83E), (0x840, 0x85B), (0x85E, 0x85E), (0x860, 0x86A),
    (0x870, 0x88E), (0x898, 0x8E1), (0x8E3, 0x983), (0x985, 0x98C), (0x98F, 0x990), (0x993, 0x9A8),
    (0x9AA, 0x9B0), (0x9B2, 0x9B2), (0x9B6, 0x9B9), (0x9BC, 0x9C4), (0x9C7, 0x9C8), (0x9CB, 0x9CE),
    (0x9D7, 0x9D7), (0x9DC, 0x9DD), (0x9DF, 0x9E3), (0x9E6, 0x9FE), (0xA01, 0xA03), (0xA05, 0xA0A),
    (0xA0F, 0xA10), (0xA13, 0xA28), (0xA2A, 0xA30), (0xA32, 0xA33), (0xA35, 0xA36), (0xA38, 0xA39),
    (0xA3C, 0xA3C), (0xA3E, 0xA42), (0xA47, 0xA48), (0xA4B, 0xA4D), (0xA51, 0xA51), (0xA59, 0xA5C),
    (0xA5E, 0xA5E), (0xA66, 0xA76), (0xA81, 0xA83), (0xA85, 0xA8D), (0xA8F, 0xA91), (0xA93, 0xAA8),
    (0xAAA, 0xAB0), (0xAB2, 0xAB3), (0xAB5, 0xAB9), (0xABC, 0xAC5), (0xAC7, 0xAC9), (0xACB, 0xACD),
    (0xAD0, 0xAD0), (0xAE0, 0xAE3), (0xAE6, 0xAF1), (0xAF9, 0xAFF), (0xB01, 0xB03), (0xB05, 0xB0C),
    (0xB0F, 0xB10), (0xB13, 0xB28), (0xB2A, 0xB30), (0xB32, 0xB33), (0xB35, 0xB39), (0xB3C, 0xB44),
    (0xB47, 0xB48), (0xB4B, 0xB4D), (0xB55, 0xB57), (0xB5C, 0xB5D), (0xB5F, 0xB63), (0xB66, 0xB77),
    (0xB82, 0xB83), (0xB85, 0xB8A), (0xB8E, 0xB90), (0xB92, 0xB95), (0xB99, 0xB9A), (0xB9C, 0xB9C),
    (0xB9E, 0xB9F), (0xBA3, 0xBA4), (0xBA8, 0xBAA), (0xBAE, 0xBB9), (0xBBE, 0xBC2), (0xBC6, 0xBC8),
    (0xBCA, 0xBCD), (0xBD0, 0xBD0), (0xBD7, 0xBD7), (0xBE6, 0xBFA), (0xC00, 0xC0C), (0xC0E, 0xC10),
    (0xC12, 0xC28), (0xC2A, 0xC39), (0xC3C, 0xC44), (0xC46, 0xC48), (0xC4A, 0xC4D), (0xC55, 0xC56),
    (0xC58, 0xC5A), (0xC5D, 0xC5D), (0xC60, 0xC63), (0xC66, 0xC6F), (0xC77, 0xC8C), (0xC8E, 0xC90),
    (0xC92, 0xCA8), (0xCAA, 0xCB3), (0xCB5, 0xCB9), (0xCBC, 0xCC4), (0xCC6, 0xCC8), (0xCCA, 0xCCD),
    (0xCD5, 0xCD6), (0xCDD, 0xCDE), (0xCE0, 0xCE3), (0xCE6, 0xCEF), (0xCF1, 0xCF3), (0xD00, 0xD0C),
    (0xD0E, 0xD10), (0xD12, 0xD44), (0xD46, 0xD48), (0xD4A, 0xD4F), (0xD54, 0xD63), (0xD66, 0xD7F),
    (0xD81, 0xD83), (0xD85, 0xD96), (0xD9A, 0xDB1), (0xDB3, 0xDBB), (0xDBD, 0xDBD), (0xDC0, 0xDC6),
    (0xDCA, 0xDCA), (0xDCF, 0xDD4), (0xDD6, 0xDD6), (0xDD8, 0xDDF), (0xDE6, 0xDEF), (0xDF2, 0xDF4),
    (0xE01, 0xE3A), (0xE3F, 0xE5B), (0xE81, 0xE82), (0xE84, 0xE84), (0xE86, 0xE8A), (0xE8C, 0xEA3),
    (0xEA5, 0xEA5), (0xEA7, 0xEBD), (0xEC0, 0xEC4), (0xEC6, 0xEC6), (0xEC8, 0xECE), (0xED0, 0xED9),
    (0xEDC, 0xEDF), (0xF00, 0xF47), (0xF49, 0xF6C), (0xF71, 0xF97), (0xF99, 0xFBC), (0xFBE, 0xFCC),
    (0xFCE, 0xFDA), (0x1000, 0x10C5), (0x10C7, 0x10C7), (0x10CD, 0x10CD), (0x10D0, 0x1248), (0x124A, 0x124D),
    (0x1250, 0x1256), (0x1258, 0x1258), (0x125A, 0x125D), (0x1260, 0x1288), (0x128A, 0x128D), (0x1290, 0x12B0),
    (0x12B2, 0x12B5), (0x12B8, 0x12BE), (0x12C0, 0x12C0), (0x12C2, 0x12C5), (0x12C8, 0x12D6), (0x12D8, 0x1310),
    (0x1312, 0x1315), (0x1318, 0x135A), (0x135D, 0x137C), (0x1380, 0x1399), (0x13A0, 0x13F5), (0x13F8, 0x13FD),
    (0x1400, 0x167F), (0x1681, 0x169C), (0x16A0, 0x16F8), (0x1700, 0x1715), (0x171F, 0x1736), (0x1740, 0x1753),
    (0x1760, 0x176C), (0x176E, 0x1770), (0x1772, 0x1773), (0x1780, 0x17DD), (0x17E0, 0x17E9), (0x17F0, 0x17F9),
    (0x1800, 0x180D), (0x180F, 0x1819), (0x1820, 0x1878), (0x1880, 0x18AA), (0x18B0, 0x18F5), (0x1900, 0x191E),
    (0x1920, 0x192B), (0x1930, 0x193B), (0x1940, 0x1940), (0x1944, 0x196D), (0x1970, 0x1974), (0x1980, 0x19AB),
    (0x19B0, 0x19C9), (0x19D0, 0x19DA), (0x19DE, 0x1A1B), (0x1A1E, 0x1A5E), (0x1A60, 0x1A7C), (0x1A7F, 0x1A89),
    (0x1A90, 0x1A99), (0x1AA0, 0x1AAD), (0x1AB0, 0x1ACE), (0x1B00, 0x1B4C), (0x1B50, 0x1B7E), (0x1B80, 0x1BF3),
    (0x1BFC, 0x1C37), (0x1C3B, 0x1C49), (0x1C4D, 0x1C88), (0x1C90, 0x1CBA), (0x1CBD, 0x1CC7), (0x1CD0, 0x1CFA),
    (0x1D00, 0x1F15), (0x1F18, 0x1F1D), (0x1F20, 0x1F45), (0x1F48, 0x1F4D), (0x1F50, 0x1F57), (0x1F59, 0x1F59),
    (0x1F5B, 0x1F5B), (0x1F5D, 0x1F5D), (0x1F5F, 0x1F7D), (0x1F80, 0x1FB4), (0x1FB6, 0x1FC4), (0x1FC6, 0x1FD3),
    (0x1FD6, 0x1FDB), (0x1FDD, 0x1FEF), (0x1FF2, 0x1FF4), (0x1FF6, 0x1FFE), (0x2010, 0x2027), (0x2030, 0x205E),
    (0x2070, 0x2071), (0x2074, 0x208E), (0x2090, 0x209C), (0x20A0, 0x20C0), (0x20D0, 0x20F0), (0x2100, 0x218B),
    (0x2190, 0x2426), (0x2440, 0x244A), (0x2460, 0x2B73), (0x2B76, 0x2B95), (0x2B97, 0x2CF3), (0x2CF9, 0x2D25),
    (0x2D27, 0x2D27), (0x2D2D, 0x2D2D), (0x2D30, 0x2D67), (0x2D6F, 0x2D70), (0x2D7F, 0x2D96), (0x2DA0, 0x2DA6),
    (0x2DA8, 0x2DAE), (0x2DB0, 0x2DB6), (0x2DB8, 0x2DBE), (0x2DC0, 0x2DC6), (0x2DC8, 0x2DCE), (0x2DD0, 0x2DD6),
    (0x2DD8, 0x2DDE), (0x2DE0, 0x2E5D), (0x2E80, 0x2E99), (0x2E9B, 0x2EF3), (0x2F00, 0x2FD5), (0x2FF0, 0x2FFB),
    (0x3001, 0x303F), (0x3041, 0x3096), (0x3099, 0x30FF), (0x3105, 0x312F), (0x3131, 0x318E), (0x3190, 0x31E3),
    (0x31F0, 0x321E), (0x3220, 0xA48C), (0xA490, 0xA4C6), (0xA4D0, 0xA62B), (0xA640, 0xA6F7), (0xA700, 0xA7CA),
    (0xA7D0, 0xA7D1), (0xA7D3, 0xA7D3), (0xA7D5, 0xA7D9), (0xA7F2, 0xA82C), (0xA830, 0xA839), (0xA840, 0xA877),
    (0xA880, 0xA8C5), (0xA8CE, 0xA8D9), (0xA8E0, 0xA953), (0xA95F, 0xA97C), (0xA980, 0xA9CD), (0xA9CF, 0xA9D9),
    (0xA9DE, 0xA9FE), (0xAA00, 0xAA36), (0xAA40, 0xAA4D), (0xAA50, 0xAA59), (0xAA5C, 0xAAC2), (0xAADB, 0xAAF6),
    (0xAB01, 0xAB06), (0xAB09, 0xAB0E), (0xAB11, 0xAB16), (0xAB20, 0xAB26), (0xAB28, 0xAB2E), (0xAB30, 0xAB6B),
    (0xAB70, 0xABED), (0xABF0, 0xABF9), (0xAC00, 0xD7A3), (0xD7B0, 0xD7C6), (0xD7CB, 0xD7FB), (0xF900, 0xFA6D),
    (0xFA70, 0xFAD9), (0xFB00, 0xFB06), (0xFB13, 0xFB17), (0xFB1D, 0xFB36), (0xFB38, 0xFB3C), (0xFB3E, 0xFB3E),
    (0xFB40, 0xFB41), (0xFB43, 0xFB44), (0xFB46, 0xFBC2), (0xFBD3, 0xFD8F), (0xFD92, 0xFDC7), (0xFDCF, 0xFDCF),
    (0xFDF0, 0xFE19), (0xFE20, 0xFE52), (0xFE54, 0xFE66), (0xFE68, 0xFE6B), (0xFE70, 0xFE74), (0xFE76, 0xFEFC),
    (0xFF01, 0xFFBE), (0xFFC2, 0xFFC7), (0xFFCA, 0xFFCF), (0xFFD2, 0xFFD7), (0xFFDA, 0xFFDC), (0xFFE0, 0xFFE6),
    (0xFFE8, 0xFFEE), (0xFFFC, 0xFFFD), (0x10000, 0x1000B), (0x1000D, 0x10026), (0x10028, 0x1003A), (0x1003C, 0x1003D),
    (0x1003F, 0x1004D), (0x10050, 0x1005D), (0x10080, 0x100FA), (0x10100, 0x10102), (0x10107, 0x10133), (0x10137, 0x1018E),
    (0x10190, 0x1019C), (0x101A0, 0x101A0), (0x101D0, 0x101FD), (0x10280, 0x1029C), (0x102A0, 0x102D0), (0x102E0, 0x102FB),
    (0x10300, 0x10323), (0x1032D, 0x1034A), (0x10350, 0x1037A), (0x10380, 0x1039D), (0x1039F, 0x103C3), (0x103C8, 0x103D5),
    (0x10400, 0x1049D), (0x104A0, 0x104A9), (0x104B0, 0x104D3), (0x104D8, 0x104FB), (0x10500, 0x10527), (0x10530, 0x10563),
    (0x1056F, 0x1057A), (0x1057C, 0x1058A), (0x1058C, 0x10592), (0x10594, 0x10595), (0x10597, 0x105A1), (0x105A3, 0x105B1),
    (0x105B3, 0x105B9), (0x105BB, 0x105BC), (0x10600, 0x10736), (0x10740, 0x10755), (0x10760, 0x10767), (0x10780, 0x10785),
    (0x10787, 0x107B0), (0x107B2, 0x107BA), (0x10800, 0x10805), (0x10808, 0x10808), (0x1080A, 0x10835), (0x10837, 0x10838),
    (0x1083C, 0x1083C), (0x1083F, 0x10855), (0x10857, 0x1089E), (0x108A7, 0x108AF), (0x108E0, 0x108F2), (0x108F4, 0x108F5),
    (0x108FB, 0x1091B), (0x1091F, 0x10939), (0x1093F, 0x1093F), (0x10980, 0x109B7), (0x109BC, 0x109CF), (0x109D2, 0x10A03),
    (0x10A05, 0x10A06), (0x10A0C, 0x10A13), (0x10A15, 0x10A17), (0x10A19, 0x10A35), (0x10A38, 0x10A3A), (0x10A3F, 0x10A48),
    (0x10A50, 0x10A58), (0x10A60, 0x10A9F), (0x10AC0, 0x10AE6), (0x10AEB, 0x10AF6), (0x10B00, 0x10B35), (0x10B39, 0x10B55),
    (0x10B58, 0x10B72), (0x10B78, 0x10B91), (0x10B99, 0x10B9C), (0x10BA9, 0x10BAF), (0x10C00, 0x10C48), (0x10C80, 0x10CB2),
    (0x10CC0, 0x10CF2), (0x10CFA, 0x10D27), (0x10D30, 0x10D39), (0x10E60, 0x10E7E), (0x10E80, 0x10EA9), (0x10EAB, 0x10EAD),
    (0x10EB0, 0x10EB1), (0x10EFD, 0x10F27), (0x10F30, 0x10F59), (0x10F70, 0x10F89), (0x10FB0, 0x10FCB), (0x10FE0, 0x10FF6),
    (0x11000, 0x1104D), (0x11052, 0x11075), (0x1107F, 0x110BC), (0x110BE, 0x110C2), (0x110D0, 0x110E8), (0x110F0, 0x110F9),
    (0x11100, 0x11134), (0x11136, 0x11147), (0x11150, 0x11176), (0x11180, 0x111DF), (0x111E1, 0x111F4), (0x11200, 0x11211),
    (0x11213, 0x11241), (0x11280, 0x11286), (0x11288, 0x11288), (0x1128A, 0x1128D), (0x1128F, 0x1129D), (0x1129F, 0x112A9),
    (0x112B0, 0x112EA), (0x112F0, 0x112F9), (0x11300, 0x11303), (0x11305, 0x1130C), (0x1130F, 0x11310), (0x11313, 0x11328),
    (0x1132A, 0x11330), (0x11332, 0x11333), (0x11335, 0x11339), (0x1133B, 0x11344), (0x11347, 0x11348), (0x1134B, 0x1134D),
    (0x11350, 0x11350), (0x11357, 0x11357), (0x1135D, 0x11363), (0x11366, 0x1136C), (0x11370, 0x11374), (0x11400, 0x1145B),
    (0x1145D, 0x11461), (0x11480, 0x114C7), (0x114D0, 0x114D9), (0x11580, 0x115B5), (0x115B8, 0x115DD), (0x11600, 0x11644),
    (0x11650, 0x11659), (0x11660, 0x1166C), (0x11680, 0x116B9), (0x116C0, 0x116C9), (0x11700, 0x1171A), (0x1171D, 0x1172B),
    (0x11730, 0x11746), (0x11800, 0x1183B), (0x118A0, 0x118F2), (0x118FF, 0x11906), (0x11909, 0x11909), (0x1190C, 0x11913),
    (0x11915, 0x11916), (0x11918, 0x11935), (0x11937, 0x11938), (0x1193B, 0x11946), (0x11950, 0x11959), (0x119A0, 0x119A7),
    (0x119AA, 0x119D7), (0x119DA, 0x119E4), (0x11A00, 0x11A47), (0x11A50, 0x11AA2), (0x11AB0, 0x11AF8), (0x11B00, 0x11B09),
    (0x11C00, 0x11C08), (0x11C0A, 0x11C36), (0x11C38, 0x11C45), (0x11C50, 0x11C6C), (0x11C70, 0x11C8F), (0x11C92, 0x11CA7),
    (0x11CA9, 0x11CB6), (0x11D00, 0x11D06), (0x11D08, 0x11D09), (0x11D0B, 0x11D36), (0x11D3A, 0x11D3A), (0x11D3C, 0x11D3D),
    (0x11D3F, 0x11D47), (0x11D50, 0x11D59), (0x11D60, 0x11D65), (0x11D67, 0x11D68), (0x11D6A, 0x11D8E), (0x11D90, 0x11D91),
    (0x11D93, 0x11D98), (0x11DA0, 0x11DA9), (0x11EE0, 0x11EF8), (0x11F00, 0x11F10), (0x11F12, 0x11F3A), (0x11F3E, 0x11F59),
    (0x11FB0, 0x11FB0), (0x11FC0, 0x11FF1), (0x11FFF, 0x12399), (0x12400, 0x1246E), (0x12470, 0x12474), (0x12480, 0x12543),
    (0x12F90, 0x12FF2), (0x13000, 0x1342F), (0x13440, 0x13455), (0x14400, 0x14646), (0x16800, 0x16A38), (0x16A40, 0x16A5E),
    (0x16A60, 0x16A69), (0x16A6E, 0x16ABE), (0x16AC0, 0x16AC9), (0x16AD0, 0x16AED), (0x16AF0, 0x16AF5), (0x16B00, 0x16B45),
    (0x16B50, 0x16B59), (0x16B5B, 0x16B61), (0x16B63, 0x16B77), (0x16B7D, 0x16B8F), (0x16E40, 0x16E9A), (0x16F00, 0x16F4A),
    (0x16F4F, 0x16F87), (0x16F8F, 0x16F9F), (0x16FE0, 0x16FE4), (0x16FF0, 0x16FF1), (0x17000, 0x187F7), (0x18800, 0x18CD5),
    (0x18D00, 0x18D08), (0x1AFF0, 0x1AFF3), (0x1AFF5, 0x1AFFB), (0x1AFFD, 0x1AFFE), (0x1B000, 0x1B122), (0x1B132, 0x1B132),
    (0x1B150, 0x1B152), (0x1B155, 0x1B155), (0x1B164, 0x1B167), (0x1B170, 0x1B2FB), (0x1BC00, 0x1BC6A), (0x1BC70, 0x1BC7C),
    (0x1BC80, 0x1BC88), (0x1BC90, 0x1BC99), (0x1BC9C, 0x1BC9F), (0x1CF00, 0x1CF2D), (0x1CF30, 0x1CF46), (0x1CF50, 0x1CFC3),
    (0x1D000, 0x1D0F5), (0x1D100, 0x1D126), (0x1D129, 0x1D172), (0x1D17B, 0x1D1EA), (0x1D200, 0x1D245), (0x1D2C0, 0x1D2D3),
    (0x1D2E0, 0x1D2F3), (0x1D300, 0x1D356), (0x1D360, 0x1D378), (0x1D400, 0x1D454), (0x1D456, 0x1D49C), (0x1D49E, 0x1D49F),
    (0x1D4A2, 0x1D4A2), (0x1D4A5, 0x1D4A6), (0x1D4A9, 0x1D4AC), (0x1D4AE, 0x1D4B9), (0x1D4BB, 0x1D4BB), (0x1D4BD, 0x1D4C3),
    (0x1D4C5, 0x1D505), (0x1D507, 0x1D50A), (0x1D50D, 0x1D514), (0x1D516, 0x1D51C), (0x1D51E, 0x1D539), (0x1D53B, 0x1D53E),
    (0x1D540, 0x1D544), (0x1D546, 0x1D546), (0x1D54A, 0x1D550), (0x1D552, 0x1D6A5), (0x1D6A8, 0x1D7CB), (0x1D7CE, 0x1DA8B),
    (0x1DA9B, 0x1DA9F), (0x1DAA1, 0x1DAAF), (0x1DF00, 0x1DF1E), (0x1DF25, 0x1DF2A), (0x1E000, 0x1E006), (0x1E008, 0x1E018),
    (0x1E01B, 0x1E021), (0x1E023, 0x1E024), (0x1E026, 0x1E02A), (0x1E030, 0x1E06D), (0x1E08F, 0x1E08F), (0x1E100, 0x1E12C),
    (0x1E130, 0x1E13D), (0x1E140, 0x1E149), (0x1E14E, 0x1E14F), (0x1E290, 0x1E2AE), (0x1E2C0, 0x1E2F9), (0x1E2FF, 0x1E2FF),
    (0x1E4D0, 0x1E4F9), (0x1E7E0, 0x1E7E6), (0x1E7E8, 0x1E7EB), (0x1E7ED, 0x1E7EE), (0x1E7F0, 0x1E7FE), (0x1E800, 0x1E8C4),
    (0x1E8C7, 0x1E8D6), (0x1E900, 0x1E94B), (0x1E950, 0x1E959), (0x1E95E, 0x1E95F), (0x1EC71, 0x1ECB4), (0x1ED01, 0x1ED3D),
    (0x1EE00, 0x1EE03), (0x1EE05, 0x1EE1F), (0x1EE21, 0x1EE22), (0x1EE24, 0x1EE24), (0x1EE27, 0x1EE27), (0x1EE29, 0x1EE32),
    (0x1EE34, 0x1EE37), (0x1EE39, 0x1EE39), (0x1EE3B, 0x1EE3B), (0x1EE42, 0x1EE42), (0x1EE47, 0x1EE47), (0x1EE49, 0x1EE49),
    (0x1EE4B, 0x1EE4B), (0x1EE4D, 0x1EE4F), (0x1EE51, 0x1EE52), (0x1EE54, 0x1EE54), (0x1EE57, 0x1EE57), (0x1EE59, 0x1EE59),
    (0x1EE5B, 0x1EE5B), (0x1EE5D, 0x1EE5D), (0x1EE5F, 0x1EE5F), (0x1EE61, 0x1EE62), (0x1EE64, 0x1EE64), (0x1EE67, 0x1EE6A),
    (0x1EE6C, 0x1EE72), (0x1EE74, 0x1EE77), (0x1EE79, 0x1EE7C), (0x1EE7E, 0x1EE7E), (0x1EE80, 0x1EE89), (0x1EE8B, 0x1EE9B),
    (0x1EEA1, 0x1EEA3), (0x1EEA5, 0x1EEA9), (0x1EEAB, 0x1EEBB), (0x1EEF0, 0x1EEF1), (0x1F000, 0x1F02B), (0x1F030, 0x1F093),
    (0x1F0A0, 0x1F0AE), (0x1F0B1, 0x1F0BF), (0x1F0C1, 0x1F0CF), (0x1F0D1, 0x1F0F5), (0x1F100, 0x1F1AD), (0x1F1E6, 0x1F202),
    (0x1F210, 0x1F23B), (0x1F240, 0x1F248), (0x1F250, 0x1F251), (0x1F260, 0x1F265), (0x1F300, 0x1F6D7), (0x1F6DC, 0x1F6EC),
    (0x1F6F0, 0x1F6FC), (0x1F700, 0x1F776), (0x1F77B, 0x1F7D9), (0x1F7E0, 0x1F7EB), (0x1F7F0, 0x1F7F0), (0x1F800, 0x1F80B),
    (0x1F810, 0x1F847), (0x1F850, 0x1F859), (0x1F860, 0x1F887), (0x1F890, 0x1F8AD), (0x1F8B0, 0x1F8B1), (0x1F900, 0x1FA53),
    (0x1FA60, 0x1FA6D), (0x1FA70, 0x1FA7C), (0x1FA80, 0x1FA88), (0x1FA90, 0x1FABD), (0x1FABF, 0x1FAC5), (0x1FACE, 0x1FADB),
    (0x1FAE0, 0x1FAE8), (0x1FAF0, 0x1FAF8), (0x1FB00, 0x1FB92), (0x1FB94, 0x1FBCA), (0x1FBF0, 0x1FBF9), (0x20000, 0x2A6DF),
    (0x2A700, 0x2B739), (0x2B740, 0x2B81D), (0x2B820, 0x2CEA1), (0x2CEB0, 0x2EBE0), (0x2F800, 0x2FA1D), (0x30000, 0x3134A),
    (0x31350, 0x323AF), (0xE0100, 0xE01EF),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{Func, IntKind, List, ListKind, Map, MapKind, MapRef, Object};
    use std::any::Any;

    /// Parses template-style operands: `1`, `1.5`, `"s"` (with `\n`, `\t`,
    /// `\xHH`, `\uHHHH`, `\UHHHHHHHH` escapes), `nil`, `true`, `false`,
    /// `(list ...)`, `(dict "k" v ...)`, `(int64 N)`, `(uint64 N)`,
    /// `(uint8 N)`, `(float64 "NaN")`, `(bytes "...")` (each char one byte)
    /// and `(complex R I)`. Literals follow text/template: a number with `.`
    /// or an exponent is a float64, otherwise an int.
    fn parse_args(s: &str) -> Vec<Value> {
        let chars: Vec<char> = s.chars().collect();
        let mut pos = 0;
        let mut out = Vec::new();
        while let Some(v) = parse_one(&chars, &mut pos) {
            out.push(v);
        }
        out
    }

    fn skip_ws(c: &[char], pos: &mut usize) {
        while *pos < c.len() && c[*pos] == ' ' {
            *pos += 1;
        }
    }

    fn parse_str(c: &[char], pos: &mut usize) -> String {
        assert_eq!(c[*pos], '"');
        *pos += 1;
        let mut out = String::new();
        while c[*pos] != '"' {
            if c[*pos] == '\\' {
                *pos += 1;
                let e = c[*pos];
                *pos += 1;
                let hex = |n: usize, pos: &mut usize| {
                    let h: String = c[*pos..*pos + n].iter().collect();
                    *pos += n;
                    char::from_u32(u32::from_str_radix(&h, 16).expect("hex")).expect("char")
                };
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'b' => out.push('\u{8}'),
                    'r' => out.push('\r'),
                    'x' => out.push(hex(2, pos)),
                    'u' => out.push(hex(4, pos)),
                    'U' => out.push(hex(8, pos)),
                    other => out.push(other),
                }
            } else {
                out.push(c[*pos]);
                *pos += 1;
            }
        }
        *pos += 1;
        out
    }

    fn parse_one(c: &[char], pos: &mut usize) -> Option<Value> {
        skip_ws(c, pos);
        if *pos >= c.len() || c[*pos] == ')' {
            return None;
        }
        if c[*pos] == '"' {
            return Some(Value::string(parse_str(c, pos)));
        }
        if c[*pos] == '(' {
            *pos += 1;
            let start = *pos;
            while c[*pos] != ' ' && c[*pos] != ')' {
                *pos += 1;
            }
            let head: String = c[start..*pos].iter().collect();
            let mut items = Vec::new();
            while let Some(v) = parse_one(c, pos) {
                items.push(v);
            }
            *pos += 1;
            let num = |v: &Value| match v {
                Value::Int(i, _) => *i,
                other => panic!("not an int: {other:?}"),
            };
            let float = |v: &Value| match v {
                Value::Float(f) => *f,
                Value::Int(i, _) => *i as f64,
                other => panic!("not a number: {other:?}"),
            };
            return Some(match head.as_str() {
                "list" => Value::list(items),
                "dict" => {
                    let mut m = Map::new();
                    for kv in items.chunks(2) {
                        m.insert(kv[0].as_str().expect("key").to_string(), kv[1].clone());
                    }
                    Value::map(m)
                }
                "int64" => Value::Int(num(&items[0]), IntKind::Int64),
                "int8" => Value::Int(num(&items[0]), IntKind::Int8),
                "uint" => Value::Uint(num(&items[0]) as u64, UintKind::Uint),
                "uint8" => Value::Uint(num(&items[0]) as u64, UintKind::Uint8),
                "uint64" => Value::Uint(num(&items[0]) as u64, UintKind::Uint64),
                "float64" => match &items[0] {
                    Value::String(s) => {
                        Value::Float(s.replace("Inf", "inf").parse().expect("float"))
                    }
                    other => Value::Float(float(other)),
                },
                "complex" => Value::Complex(float(&items[0]), float(&items[1])),
                "bytes" => {
                    let s = items[0].as_str().expect("bytes");
                    let b: Vec<u8> = if s.chars().all(|c| (c as u32) < 256) {
                        s.chars().map(|c| c as u8).collect()
                    } else {
                        s.as_bytes().to_vec()
                    };
                    Value::Bytes(b.into())
                }
                other => panic!("unknown form {other}"),
            });
        }
        let start = *pos;
        while *pos < c.len() && c[*pos] != ' ' && c[*pos] != ')' {
            *pos += 1;
        }
        let tok: String = c[start..*pos].iter().collect();
        Some(match tok.as_str() {
            "nil" => Value::Nil,
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            t if t.contains(['.', 'e', 'E']) => Value::Float(t.parse().expect("float")),
            t => Value::Int(t.parse().expect("int"), IntKind::Int),
        })
    }

    fn check(cases: &[(&str, &str, &str)]) {
        let mut failures = Vec::new();
        for (format, args, want) in cases {
            let got = sprintf(format, &parse_args(args));
            if got != *want {
                failures.push(format!(
                    "sprintf({format:?}, {args}) = {got:?}, want {want:?}"
                ));
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {} failed:\n{}",
            failures.len(),
            cases.len(),
            failures.join("\n")
        );
    }

    /// Outputs of the real Helm v4.2.3 (Go 1.26) engine for `printf` with
    /// these operands, recorded through the Helm oracle in `shared/tools`.
    #[test]
    fn helm_printf_outputs() {
        check(&[
        ("%d", "0.375", "%!d(float64=0.375)"),
        ("%d", "(float64 \"-Inf\")", "%!d(float64=-Inf)"),
        ("%d", "\"a\\\\b\"", "%!d(string=a\\b)"),
        ("%d", "(list 1.0 2.5 1000000.0)", "[%!d(float64=1) %!d(float64=2.5) %!d(float64=1e+06)]"),
        ("%d", "\"abc\"", "%!d(string=abc)"),
        ("%v", "0.375", "0.375"),
        ("%v", "(float64 \"-Inf\")", "-Inf"),
        ("%v", "\"a\\\\b\"", "a\\b"),
        ("%v", "(list 1.0 2.5 1000000.0)", "[1 2.5 1e+06]"),
        ("%v", "\"abc\"", "abc"),
        ("%5d", "65", "   65"),
        ("%5d", "55296", "55296"),
        ("%5d", "9786", " 9786"),
        ("%5d", "-255", " -255"),
        ("%5d", "1114112", "1114112"),
        ("%-5d", "65", "65   "),
        ("%-5d", "55296", "55296"),
        ("%-5d", "9786", "9786 "),
        ("%-5d", "-255", "-255 "),
        ("%-5d", "1114112", "1114112"),
        ("%05d", "(list 1.0 2.5 1000000.0)", "[%!d(float64=00001) %!d(float64=002.5) %!d(float64=1e+06)]"),
        ("%05d", "65", "00065"),
        ("%05d", "55296", "55296"),
        ("%05d", "9786", "09786"),
        ("%05d", "-255", "-0255"),
        ("%+d", "65", "+65"),
        ("%+d", "55296", "+55296"),
        ("%+d", "9786", "+9786"),
        ("%+d", "-255", "-255"),
        ("%+d", "1114112", "+1114112"),
        ("% d", "65", " 65"),
        ("% d", "55296", " 55296"),
        ("% d", "9786", " 9786"),
        ("% d", "-255", "-255"),
        ("% d", "1114112", " 1114112"),
        ("%x", "0.375", "0x1.8p-02"),
        ("%x", "(float64 \"-Inf\")", "-Inf"),
        ("%x", "\"a\\\\b\"", "615c62"),
        ("%x", "(list 1.0 2.5 1000000.0)", "[0x1p+00 0x1.4p+01 0x1.e848p+19]"),
        ("%x", "\"abc\"", "616263"),
        ("%X", "0.375", "0X1.8P-02"),
        ("%X", "(float64 \"-Inf\")", "-Inf"),
        ("%X", "\"a\\\\b\"", "615C62"),
        ("%X", "(list 1.0 2.5 1000000.0)", "[0X1P+00 0X1.4P+01 0X1.E848P+19]"),
        ("%X", "\"abc\"", "616263"),
        ("%#x", "0.375", "0x1.8000p-02"),
        ("%#x", "(float64 \"-Inf\")", "-Inf"),
        ("%#x", "\"a\\\\b\"", "0x615c62"),
        ("%#x", "(list 1.0 2.5 1000000.0)", "[0x1.0000p+00 0x1.4000p+01 0x1.e848p+19]"),
        ("%#x", "\"abc\"", "0x616263"),
        ("%#X", "65", "0X41"),
        ("%#X", "55296", "0XD800"),
        ("%#X", "9786", "0X263A"),
        ("%#X", "-255", "-0XFF"),
        ("%#X", "1114112", "0X110000"),
        ("%o", "65", "101"),
        ("%o", "55296", "154000"),
        ("%o", "9786", "23072"),
        ("%o", "(bytes \"hi\")", "[150 151]"),
        ("%o", "-255", "-377"),
        ("%#o", "65", "0101"),
        ("%#o", "55296", "0154000"),
        ("%#o", "9786", "023072"),
        ("%#o", "-255", "-0377"),
        ("%#o", "1114112", "04200000"),
        ("%O", "65", "0o101"),
        ("%O", "55296", "0o154000"),
        ("%O", "9786", "0o23072"),
        ("%O", "-255", "-0o377"),
        ("%O", "1114112", "0o4200000"),
        ("%b", "0.375", "6755399441055744p-54"),
        ("%b", "(float64 \"-Inf\")", "-Inf"),
        ("%b", "1.2e-05", "7083549724304468p-69"),
        ("%b", "1.5", "6755399441055744p-52"),
        ("%b", "1.7976931348623157e+308", "9007199254740991p+971"),
        ("%#b", "65", "0b1000001"),
        ("%#b", "55296", "0b1101100000000000"),
        ("%#b", "9786", "0b10011000111010"),
        ("%#b", "-255", "-0b11111111"),
        ("%#b", "1114112", "0b100010000000000000000"),
        ("%c", "0.375", "%!c(float64=0.375)"),
        ("%c", "(float64 \"-Inf\")", "%!c(float64=-Inf)"),
        ("%c", "\"a\\\\b\"", "%!c(string=a\\b)"),
        ("%c", "(list 1.0 2.5 1000000.0)", "[%!c(float64=1) %!c(float64=2.5) %!c(float64=1e+06)]"),
        ("%c", "\"abc\"", "%!c(string=abc)"),
        ("%q", "0.375", "%!q(float64=0.375)"),
        ("%q", "(float64 \"-Inf\")", "%!q(float64=-Inf)"),
        ("%q", "\"a\\\\b\"", "\"a\\\\b\""),
        ("%q", "(list 1.0 2.5 1000000.0)", "[%!q(float64=1) %!q(float64=2.5) %!q(float64=1e+06)]"),
        ("%q", "\"abc\"", "\"abc\""),
        ("%+q", "\"a\\\\b\"", "\"a\\\\b\""),
        ("%+q", "\"abc\"", "\"abc\""),
        ("%+q", "\"\\t`x\"", "\"\\t`x\""),
        ("%+q", "\"\\ufeff\"", "\"\\ufeff\""),
        ("%+q", "65", "'A'"),
        ("%#q", "\"a\\\\b\"", "`a\\b`"),
        ("%#q", "\"abc\"", "`abc`"),
        ("%#q", "\"\\t`x\"", "\"\\t`x\""),
        ("%#q", "\"\\ufeff\"", "\"\\ufeff\""),
        ("%#q", "65", "'A'"),
        ("%U", "(list 1.0 2.5 1000000.0)", "[%!U(float64=1) %!U(float64=2.5) %!U(float64=1e+06)]"),
        ("%U", "65", "U+0041"),
        ("%U", "55296", "U+D800"),
        ("%U", "9786", "U+263A"),
        ("%U", "(bytes \"hi\")", "[U+0068 U+0069]"),
        ("%#U", "65", "U+0041 'A'"),
        ("%#U", "55296", "U+D800"),
        ("%#U", "9786", "U+263A '☺'"),
        ("%#U", "-255", "U+FFFFFFFFFFFFFF01"),
        ("%#U", "1114112", "U+110000"),
        ("%.3d", "65", "065"),
        ("%.3d", "55296", "55296"),
        ("%.3d", "9786", "9786"),
        ("%.3d", "-255", "-255"),
        ("%.3d", "1114112", "1114112"),
        ("%8.3d", "65", "     065"),
        ("%8.3d", "55296", "   55296"),
        ("%8.3d", "9786", "    9786"),
        ("%8.3d", "-255", "    -255"),
        ("%8.3d", "1114112", " 1114112"),
        ("%08.3d", "65", "     065"),
        ("%08.3d", "55296", "   55296"),
        ("%08.3d", "9786", "    9786"),
        ("%08.3d", "-255", "    -255"),
        ("%08.3d", "1114112", " 1114112"),
        ("%-08.3d", "65", "065     "),
        ("%-08.3d", "55296", "55296   "),
        ("%-08.3d", "9786", "9786    "),
        ("%-08.3d", "-255", "-255    "),
        ("%-08.3d", "1114112", "1114112 "),
        ("%.0d", "65", "65"),
        ("%.0d", "55296", "55296"),
        ("%.0d", "9786", "9786"),
        ("%.0d", "-255", "-255"),
        ("%.0d", "1114112", "1114112"),
        ("%5.0d", "65", "   65"),
        ("%5.0d", "55296", "55296"),
        ("%5.0d", "9786", " 9786"),
        ("%5.0d", "-255", " -255"),
        ("%5.0d", "1114112", "1114112"),
        ("%+05d", "65", "+0065"),
        ("%+05d", "55296", "+55296"),
        ("%+05d", "9786", "+9786"),
        ("%+05d", "-255", "-0255"),
        ("%+05d", "1114112", "+1114112"),
        ("% 05d", "65", " 0065"),
        ("% 05d", "55296", " 55296"),
        ("% 05d", "9786", " 9786"),
        ("% 05d", "-255", "-0255"),
        ("% 05d", "1114112", " 1114112"),
        ("%#08x", "65", "0x00000041"),
        ("%#08x", "55296", "0x0000d800"),
        ("%#08x", "9786", "0x0000263a"),
        ("%#08x", "-255", "-0x00000ff"),
        ("%#08x", "1114112", "0x00110000"),
        ("%#.4x", "65", "0x0041"),
        ("%#.4x", "55296", "0xd800"),
        ("%#.4x", "9786", "0x263a"),
        ("%#.4x", "-255", "-0x00ff"),
        ("%#.4x", "1114112", "0x110000"),
        ("%#v", "0.375", "0.375"),
        ("%#v", "(float64 \"-Inf\")", "-Inf"),
        ("%#v", "\"a\\\\b\"", "\"a\\\\b\""),
        ("%#v", "(list 1.0 2.5 1000000.0)", "[]interface {}{1, 2.5, 1e+06}"),
        ("%#v", "\"abc\"", "\"abc\""),
        ("%+v", "0.375", "0.375"),
        ("%+v", "(float64 \"-Inf\")", "-Inf"),
        ("%+v", "\"a\\\\b\"", "a\\b"),
        ("%+v", "(list 1.0 2.5 1000000.0)", "[1 2.5 1e+06]"),
        ("%+v", "\"abc\"", "abc"),
        ("%s", "0.375", "%!s(float64=0.375)"),
        ("%s", "(float64 \"-Inf\")", "%!s(float64=-Inf)"),
        ("%s", "\"a\\\\b\"", "a\\b"),
        ("%s", "(list 1.0 2.5 1000000.0)", "[%!s(float64=1) %!s(float64=2.5) %!s(float64=1e+06)]"),
        ("%s", "\"abc\"", "abc"),
        ("%f", "0.375", "0.375000"),
        ("%f", "(float64 \"-Inf\")", "-Inf"),
        ("%f", "1.2e-05", "0.000012"),
        ("%f", "1.5", "1.500000"),
        ("%f", "1.7976931348623157e+308", "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368.000000"),
        ("%t", "0.375", "%!t(float64=0.375)"),
        ("%t", "(float64 \"-Inf\")", "%!t(float64=-Inf)"),
        ("%t", "\"a\\\\b\"", "%!t(string=a\\b)"),
        ("%t", "(list 1.0 2.5 1000000.0)", "[%!t(float64=1) %!t(float64=2.5) %!t(float64=1e+06)]"),
        ("%t", "\"abc\"", "%!t(string=abc)"),
        ("%e", "0.375", "3.750000e-01"),
        ("%e", "(float64 \"-Inf\")", "-Inf"),
        ("%e", "(list 1.0 2.5 1000000.0)", "[1.000000e+00 2.500000e+00 1.000000e+06]"),
        ("%e", "1.2e-05", "1.200000e-05"),
        ("%e", "1.5", "1.500000e+00"),
        ("%g", "0.375", "0.375"),
        ("%g", "(float64 \"-Inf\")", "-Inf"),
        ("%g", "1.2e-05", "1.2e-05"),
        ("%g", "1.5", "1.5"),
        ("%g", "1.7976931348623157e+308", "1.7976931348623157e+308"),
        ("%10.4U", "65", "    U+0041"),
        ("%10.4U", "55296", "    U+D800"),
        ("%10.4U", "9786", "    U+263A"),
        ("%10.4U", "-255", "U+FFFFFFFFFFFFFF01"),
        ("%10.4U", "1114112", "  U+110000"),
        ("%#-12U", "65", "U+0041 'A'  "),
        ("%#-12U", "55296", "U+D800      "),
        ("%#-12U", "9786", "U+263A '☺'  "),
        ("%#-12U", "-255", "U+FFFFFFFFFFFFFF01"),
        ("%#-12U", "1114112", "U+110000    "),
        ("%x.", "65", "41."),
        ("%x.", "55296", "d800."),
        ("%x.", "9786", "263a."),
        ("%x.", "-255", "-ff."),
        ("%x.", "1114112", "110000."),
        ("%3c", "65", "  A"),
        ("%3c", "55296", "  �"),
        ("%3c", "9786", "  ☺"),
        ("%3c", "-255", "  �"),
        ("%3c", "1114112", "  �"),
        ("%-3c", "65", "A  "),
        ("%-3c", "55296", "�  "),
        ("%-3c", "9786", "☺  "),
        ("%-3c", "-255", "�  "),
        ("%-3c", "1114112", "�  "),
        ("%03c", "65", "00A"),
        ("%03c", "55296", "00�"),
        ("%03c", "9786", "00☺"),
        ("%03c", "-255", "00�"),
        ("%03c", "1114112", "00�"),
        ("%012q", "65", "000000000'A'"),
        ("%012q", "55296", "000000000'�'"),
        ("%012q", "9786", "000000000'☺'"),
        ("%012q", "-255", "000000000'�'"),
        ("%012q", "1114112", "000000000'�'"),
        ("%T", "\"a\\\\b\"", "string"),
        ("%T", "(list 1.0 2.5 1000000.0)", "[]interface {}"),
        ("%T", "\"abc\"", "string"),
        ("%T", "\"\\t`x\"", "string"),
        ("%T", "\"\\ufeff\"", "string"),
        ("%G", "0.375", "0.375"),
        ("%G", "(float64 \"-Inf\")", "-Inf"),
        ("%G", "1.2e-05", "1.2E-05"),
        ("%G", "1.5", "1.5"),
        ("%G", "1.7976931348623157e+308", "1.7976931348623157E+308"),
        ("%E", "0.375", "3.750000E-01"),
        ("%E", "(float64 \"-Inf\")", "-Inf"),
        ("%E", "1.2e-05", "1.200000E-05"),
        ("%E", "1.5", "1.500000E+00"),
        ("%E", "1.7976931348623157e+308", "1.797693E+308"),
        ("%F", "0.375", "0.375000"),
        ("%F", "(float64 \"-Inf\")", "-Inf"),
        ("%F", "1.2e-05", "0.000012"),
        ("%F", "1.5", "1.500000"),
        ("%F", "1.7976931348623157e+308", "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368.000000"),
        ("%.2f", "0.375", "0.38"),
        ("%.2f", "(float64 \"-Inf\")", "-Inf"),
        ("%.2f", "1.2e-05", "0.00"),
        ("%.2f", "1.5", "1.50"),
        ("%.2f", "1.7976931348623157e+308", "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368.00"),
        ("%.0f", "0.375", "0"),
        ("%.0f", "(float64 \"-Inf\")", "-Inf"),
        ("%.0f", "1.2e-05", "0"),
        ("%.0f", "1.5", "2"),
        ("%.0f", "1.7976931348623157e+308", "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368"),
        ("%.1f", "0.375", "0.4"),
        ("%.1f", "(float64 \"-Inf\")", "-Inf"),
        ("%.1f", "(list 1.0 2.5 1000000.0)", "[1.0 2.5 1000000.0]"),
        ("%.1f", "1.2e-05", "0.0"),
        ("%.1f", "1.5", "1.5"),
        ("%.3e", "0.375", "3.750e-01"),
        ("%.3e", "(float64 \"-Inf\")", "-Inf"),
        ("%.3e", "1.2e-05", "1.200e-05"),
        ("%.3e", "1.5", "1.500e+00"),
        ("%.3e", "1.7976931348623157e+308", "1.798e+308"),
        ("%.0e", "0.375", "4e-01"),
        ("%.0e", "(float64 \"-Inf\")", "-Inf"),
        ("%.0e", "1.2e-05", "1e-05"),
        ("%.0e", "1.5", "2e+00"),
        ("%.0e", "1.7976931348623157e+308", "2e+308"),
        ("%.3g", "0.375", "0.375"),
        ("%.3g", "(float64 \"-Inf\")", "-Inf"),
        ("%.3g", "1.2e-05", "1.2e-05"),
        ("%.3g", "1.5", "1.5"),
        ("%.3g", "1.7976931348623157e+308", "1.8e+308"),
        ("%.10g", "0.375", "0.375"),
        ("%.10g", "(float64 \"-Inf\")", "-Inf"),
        ("%.10g", "1.2e-05", "1.2e-05"),
        ("%.10g", "1.5", "1.5"),
        ("%.10g", "1.7976931348623157e+308", "1.797693135e+308"),
        ("%.0g", "0.375", "0.4"),
        ("%.0g", "(float64 \"-Inf\")", "-Inf"),
        ("%.0g", "1.2e-05", "1e-05"),
        ("%.0g", "1.5", "2"),
        ("%.0g", "1.7976931348623157e+308", "2e+308"),
        ("%#g", "0.375", "0.375000"),
        ("%#g", "(float64 \"-Inf\")", "-Inf"),
        ("%#g", "1.2e-05", "1.20000e-05"),
        ("%#g", "1.5", "1.50000"),
        ("%#g", "1.7976931348623157e+308", "1.7976931348623157e+308"),
        ("%#.3g", "0.375", "0.375"),
        ("%#.3g", "(float64 \"-Inf\")", "-Inf"),
        ("%#.3g", "1.2e-05", "1.20e-05"),
        ("%#.3g", "1.5", "1.50"),
        ("%#.3g", "1.7976931348623157e+308", "1.80e+308"),
        ("%#.0f", "0.375", "0."),
        ("%#.0f", "(float64 \"-Inf\")", "-Inf"),
        ("%#.0f", "1.2e-05", "0."),
        ("%#.0f", "1.5", "2."),
        ("%#.0f", "1.7976931348623157e+308", "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368."),
        ("%#.0e", "0.375", "4.e-01"),
        ("%#.0e", "(float64 \"-Inf\")", "-Inf"),
        ("%#.0e", "1.2e-05", "1.e-05"),
        ("%#.0e", "1.5", "2.e+00"),
        ("%#.0e", "1.7976931348623157e+308", "2.e+308"),
        ("%8.3f", "0.375", "   0.375"),
        ("%8.3f", "(float64 \"-Inf\")", "    -Inf"),
        ("%8.3f", "1.2e-05", "   0.000"),
        ("%8.3f", "1.5", "   1.500"),
        ("%8.3f", "1.7976931348623157e+308", "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368.000"),
        ("%-8.3f", "0.375", "0.375   "),
        ("%-8.3f", "(float64 \"-Inf\")", "-Inf    "),
        ("%-8.3f", "1.2e-05", "0.000   "),
        ("%-8.3f", "1.5", "1.500   "),
        ("%-8.3f", "1.7976931348623157e+308", "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368.000"),
        ("%08.3f", "0.375", "0000.375"),
        ("%08.3f", "(float64 \"-Inf\")", "    -Inf"),
        ("%08.3f", "(list 1.0 2.5 1000000.0)", "[0001.000 0002.500 1000000.000]"),
        ("%08.3f", "1.2e-05", "0000.000"),
        ("%08.3f", "1.5", "0001.500"),
        ("%+08.3f", "0.375", "+000.375"),
        ("%+08.3f", "(float64 \"-Inf\")", "    -Inf"),
        ("%+08.3f", "1.2e-05", "+000.000"),
        ("%+08.3f", "1.5", "+001.500"),
        ("%+08.3f", "1.7976931348623157e+308", "+179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368.000"),
        ("% 08.3f", "0.375", " 000.375"),
        ("% 08.3f", "(float64 \"-Inf\")", "    -Inf"),
        ("% 08.3f", "1.2e-05", " 000.000"),
        ("% 08.3f", "1.5", " 001.500"),
        ("% 08.3f", "1.7976931348623157e+308", " 179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368.000"),
        ("%+.3e", "0.375", "+3.750e-01"),
        ("%+.3e", "(float64 \"-Inf\")", "-Inf"),
        ("%+.3e", "1.2e-05", "+1.200e-05"),
        ("%+.3e", "1.5", "+1.500e+00"),
        ("%+.3e", "1.7976931348623157e+308", "+1.798e+308"),
        ("% .3f", "0.375", " 0.375"),
        ("% .3f", "(float64 \"-Inf\")", "-Inf"),
        ("% .3f", "1.2e-05", " 0.000"),
        ("% .3f", "1.5", " 1.500"),
        ("% .3f", "1.7976931348623157e+308", " 179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368.000"),
        ("%.3x", "0.375", "0x1.800p-02"),
        ("%.3x", "(float64 \"-Inf\")", "-Inf"),
        ("%.3x", "1.2e-05", "0x1.92ap-17"),
        ("%.3x", "1.5", "0x1.800p+00"),
        ("%.3x", "1.7976931348623157e+308", "0x1.000p+1024"),
        ("%10v", "0.375", "     0.375"),
        ("%10v", "(float64 \"-Inf\")", "      -Inf"),
        ("%10v", "1.2e-05", "   1.2e-05"),
        ("%10v", "1.5", "       1.5"),
        ("%10v", "1.7976931348623157e+308", "1.7976931348623157e+308"),
        ("%-10g|", "0.375", "0.375     |"),
        ("%-10g|", "(float64 \"-Inf\")", "-Inf      |"),
        ("%-10g|", "1.2e-05", "1.2e-05   |"),
        ("%-10g|", "1.5", "1.5       |"),
        ("%-10g|", "1.7976931348623157e+308", "1.7976931348623157e+308|"),
        ("%010v", "0.375", "000000.375"),
        ("%010v", "(float64 \"-Inf\")", "      -Inf"),
        ("%010v", "1.2e-05", "0001.2e-05"),
        ("%010v", "1.5", "00000001.5"),
        ("%010v", "1.7976931348623157e+308", "1.7976931348623157e+308"),
        ("%.20f", "0.375", "0.37500000000000000000"),
        ("%.20f", "(float64 \"-Inf\")", "-Inf"),
        ("%.20f", "1.2e-05", "0.00001200000000000000"),
        ("%.20f", "1.5", "1.50000000000000000000"),
        ("%.20f", "1.7976931348623157e+308", "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368.00000000000000000000"),
        ("%.17g", "0.375", "0.375"),
        ("%.17g", "(float64 \"-Inf\")", "-Inf"),
        ("%.17g", "1.2e-05", "1.2e-05"),
        ("%.17g", "1.5", "1.5"),
        ("%.17g", "1.7976931348623157e+308", "1.7976931348623157e+308"),
        ("%#.4g", "0.375", "0.3750"),
        ("%#.4g", "(float64 \"-Inf\")", "-Inf"),
        ("%#.4g", "1.2e-05", "1.200e-05"),
        ("%#.4g", "1.5", "1.500"),
        ("%#.4g", "1.7976931348623157e+308", "1.798e+308"),
        ("% x", "\"a\\\\b\"", "61 5c 62"),
        ("% x", "(list 1.0 2.5 1000000.0)", "[ 0x1p+00  0x1.4p+01  0x1.e848p+19]"),
        ("% x", "\"abc\"", "61 62 63"),
        ("% x", "\"\\t`x\"", "09 60 78"),
        ("% x", "\"\\ufeff\"", "ef bb bf"),
        ("%# X", "\"a\\\\b\"", "0X61 0X5C 0X62"),
        ("%# X", "\"abc\"", "0X61 0X62 0X63"),
        ("%# X", "\"\\t`x\"", "0X09 0X60 0X78"),
        ("%# X", "\"\\ufeff\"", "0XEF 0XBB 0XBF"),
        ("%# X", "\"\"", ""),
        ("%5s|", "\"a\\\\b\"", "  a\\b|"),
        ("%5s|", "\"abc\"", "  abc|"),
        ("%5s|", "\"\\t`x\"", "  \t`x|"),
        ("%5s|", "\"\\ufeff\"", "    \u{feff}|"),
        ("%5s|", "\"\"", "     |"),
        ("%-5s|", "\"a\\\\b\"", "a\\b  |"),
        ("%-5s|", "\"abc\"", "abc  |"),
        ("%-5s|", "\"\\t`x\"", "\t`x  |"),
        ("%-5s|", "\"\\ufeff\"", "\u{feff}    |"),
        ("%-5s|", "\"\"", "     |"),
        ("%05s", "\"a\\\\b\"", "00a\\b"),
        ("%05s", "\"abc\"", "00abc"),
        ("%05s", "\"\\t`x\"", "00\t`x"),
        ("%05s", "\"\\ufeff\"", "0000\u{feff}"),
        ("%05s", "\"\"", "00000"),
        ("%.2s", "\"a\\\\b\"", "a\\"),
        ("%.2s", "\"abc\"", "ab"),
        ("%.2s", "\"\\t`x\"", "\t`"),
        ("%.2s", "\"\\ufeff\"", "\u{feff}"),
        ("%.2s", "\"\"", ""),
        ("%.0s", "\"a\\\\b\"", ""),
        ("%.0s", "\"abc\"", ""),
        ("%.0s", "\"\\t`x\"", ""),
        ("%.0s", "\"\\ufeff\"", ""),
        ("%.0s", "\"\"", ""),
        ("%8.2q", "\"a\\\\b\"", "   \"a\\\\\""),
        ("%8.2q", "\"abc\"", "    \"ab\""),
        ("%8.2q", "\"\\t`x\"", "   \"\\t`\""),
        ("%8.2q", "\"\\ufeff\"", "\"\\ufeff\""),
        ("%8.2q", "\"\"", "      \"\""),
        ("%10x|", "\"a\\\\b\"", "    615c62|"),
        ("%10x|", "\"abc\"", "    616263|"),
        ("%10x|", "\"\\t`x\"", "    096078|"),
        ("%10x|", "\"\\ufeff\"", "    efbbbf|"),
        ("%10x|", "\"\"", "          |"),
        ("%-10X|", "\"a\\\\b\"", "615C62    |"),
        ("%-10X|", "\"abc\"", "616263    |"),
        ("%-10X|", "\"\\t`x\"", "096078    |"),
        ("%-10X|", "\"\\ufeff\"", "EFBBBF    |"),
        ("%-10X|", "\"\"", "          |"),
        ("%.1x", "\"a\\\\b\"", "61"),
        ("%.1x", "\"abc\"", "61"),
        ("%.1x", "\"\\t`x\"", "09"),
        ("%.1x", "\"\\ufeff\"", "ef"),
        ("%.1x", "(bytes \"hi\")", "68"),
        ("%3v", "\"a\\\\b\"", "a\\b"),
        ("%3v", "\"abc\"", "abc"),
        ("%3v", "\"\\t`x\"", "\t`x"),
        ("%3v", "\"\\ufeff\"", "  \u{feff}"),
        ("%3v", "\"\"", "   "),
        ("%q|%s", "\"a\\\\b\"", "\"a\\\\b\"|%!s(MISSING)"),
        ("%q|%s", "\"abc\"", "\"abc\"|%!s(MISSING)"),
        ("%q|%s", "\"\\t`x\"", "\"\\t`x\"|%!s(MISSING)"),
        ("%q|%s", "\"\\ufeff\"", "\"\\ufeff\"|%!s(MISSING)"),
        ("%q|%s", "\"\"", "\"\"|%!s(MISSING)"),
        ("%5t|", "false", "false|"),
        ("%5t|", "true", " true|"),
        ("%-6v|", "(bytes \"hi\")", "[104    105   ]|"),
        ("%-6v|", "false", "false |"),
        ("%-6v|", "(bytes \"日本\")", "[230    151    165    230    156    172   ]|"),
        ("%-6v|", "true", "true  |"),
        ("%-6v|", "(bytes \"\")", "[]|"),
        ("%5v|", "nil", "<nil>|"),
        ("%-5v|", "nil", "<nil>|"),
        ("%p", "nil", "%!p(<nil>)"),
        ("%5T|", "nil", "<nil>|"),
        ("%.2T", "nil", "<nil>"),
        ("%!", "nil", "%!!(<nil>)"),
        ("%!", "", "%!!(MISSING)"),
        ("%z", "(list 1.0 2.5 1000000.0)", "[%!z(float64=1) %!z(float64=2.5) %!z(float64=1e+06)]"),
        ("%z", "(bytes \"hi\")", "[%!z(uint8=104) %!z(uint8=105)]"),
        ("%z", "(dict \"a\" 1 \"b\" \"x\")", "map[%!z(string=a):%!z(int=1) %!z(string=b):%!z(string=x)]"),
        ("%z", "(list (list 1) (dict \"a\" nil))", "[[%!z(int=1)] map[%!z(string=a):<nil>]]"),
        ("%z", "(list \"a\" \"b\")", "[%!z(string=a) %!z(string=b)]"),
        ("%w", "(list 1.0 2.5 1000000.0)", "%!w([]interface {}=[1 2.5 1e+06])"),
        ("%w", "(dict \"a\" 1 \"b\" \"x\")", "%!w(map[string]interface {}=map[a:1 b:x])"),
        ("%w", "(list (list 1) (dict \"a\" nil))", "%!w([]interface {}=[[1] map[a:<nil>]])"),
        ("%w", "(list \"a\" \"b\")", "%!w([]interface {}=[a b])"),
        ("%w", "(dict \"a b\" \"c d\" \"é\" 1)", "%!w(map[string]interface {}=map[a b:c d é:1])"),
        ("%5v", "(list 1.0 2.5 1000000.0)", "[    1   2.5 1e+06]"),
        ("%5v", "(bytes \"hi\")", "[  104   105]"),
        ("%5v", "(dict \"a\" 1 \"b\" \"x\")", "map[    a:    1     b:    x]"),
        ("%5v", "(list (list 1) (dict \"a\" nil))", "[[    1] map[    a:<nil>]]"),
        ("%5v", "(list \"a\" \"b\")", "[    a     b]"),
        ("%-4d|", "(list 1.0 2.5 1000000.0)", "[%!d(float64=1   ) %!d(float64=2.5 ) %!d(float64=1e+06)]|"),
        ("%-4d|", "(list (list 1) (dict \"a\" nil))", "[[1   ] map[%!d(string=a   ):<nil>]]|"),
        ("%-4d|", "(list \"a\" \"b\")", "[%!d(string=a   ) %!d(string=b   )]|"),
        ("%-4d|", "(list)", "[]|"),
        ("%-4d|", "(list 1 \"a\" nil)", "[1    %!d(string=a   ) <nil>]|"),
        ("%6.2v", "(list 1.0 2.5 1000000.0)", "[     1    2.5  1e+06]"),
        ("%6.2v", "(list (list 1) (dict \"a\" nil))", "[[    01] map[     a:<nil>]]"),
        ("%6.2v", "(list \"a\" \"b\")", "[     a      b]"),
        ("%6.2v", "(list)", "[]"),
        ("%6.2v", "(list 1 \"a\" nil)", "[    01      a <nil>]"),
        ("%-3v|", "(dict \"a\" 1 \"b\" \"x\")", "map[a  :1   b  :x  ]|"),
        ("%-3v|", "(dict \"a b\" \"c d\" \"é\" 1)", "map[a b:c d é  :1  ]|"),
        ("%-3v|", "(dict)", "map[]|"),
        ("%-3v|", "(dict \"x\" (list 1 2) \"y\" (dict \"z\" nil))", "map[x  :[1   2  ] y  :map[z  :<nil>]]|"),
        ("%-3v|", "(dict \"a\" 1.5 \"b\" false)", "map[a  :1.5 b  :false]|"),
        ("%# x", "(bytes \"hi\")", "0x68 0x69"),
        ("%# x", "(bytes \"日本\")", "0xe6 0x97 0xa5 0xe6 0x9c 0xac"),
        ("%# x", "(bytes \"\")", ""),
        ("%# x", "(bytes \"\\x00ÿ\\x10\")", "0x00 0xff 0x10"),
        ("%06v", "(bytes \"hi\")", "[000104 000105]"),
        ("%06v", "(bytes \"日本\")", "[000230 000151 000165 000230 000156 000172]"),
        ("%06v", "(list -10.0 10)", "[-00010 000010]"),
        ("%06v", "(list 10.0 10)", "[000010 000010]"),
        ("%06v", "(bytes \"\")", "[]"),
        ("%#6v", "(bytes \"hi\")", "[]byte{  0x68,   0x69}"),
        ("%#6v", "(bytes \"日本\")", "[]byte{  0xe6,   0x97,   0xa5,   0xe6,   0x9c,   0xac}"),
        ("%#6v", "(bytes \"\")", "[]byte{}"),
        ("%#6v", "(bytes \"\\x00ÿ\\x10\")", "[]byte{   0x0,   0xff,   0x10}"),
        ("%#06v", "(bytes \"hi\")", "[]byte{0x000068, 0x000069}"),
        ("%#06v", "(bytes \"日本\")", "[]byte{0x0000e6, 0x000097, 0x0000a5, 0x0000e6, 0x00009c, 0x0000ac}"),
        ("%#06v", "(bytes \"\")", "[]byte{}"),
        ("%#06v", "(bytes \"\\x00ÿ\\x10\")", "[]byte{0x000000, 0x0000ff, 0x000010}"),
        ("%.1s", "(bytes \"hi\")", "h"),
        ("%.1s", "(bytes \"日本\")", "日"),
        ("%.1s", "(bytes \"\")", ""),
        ("%.1s", "(bytes \"\\x00ÿ\\x10\")", "\u{0}"),
        ("%.1q", "(bytes \"hi\")", "\"h\""),
        ("%.1q", "(bytes \"日本\")", "\"日\""),
        ("%.1q", "(bytes \"\")", "\"\""),
        ("%.1q", "(bytes \"\\x00ÿ\\x10\")", "\"\\x00\""),
        ("%10s|", "(bytes \"hi\")", "        hi|"),
        ("%10s|", "(bytes \"日本\")", "        日本|"),
        ("%10s|", "(bytes \"\")", "          |"),
        ("%10s|", "(bytes \"\\x00ÿ\\x10\")", "       \u{0}�\u{10}|"),
        ("%%", "", "%"),
        ("%d%%", "50", "50%"),
        ("%[2]v %[1]v", "1 2", "2 1"),
        ("%*d|", "5 42", "   42|"),
        ("%*d|", "5.0 42", "%!(BADWIDTH)42|"),
        ("%*d|", "10000000 42", "%!(BADWIDTH)42|"),
        ("%*d|", "-5 42", "42   |"),
        ("%.*f", "2 3.14159", "3.14"),
        ("%-*d|", "5 42", "42   |"),
        ("%.*d|", "\"x\" 42", "%!(BADPREC)42|"),
        ("%.*d|", "-1 42", "%!(BADPREC)42|"),
        ("no verbs", "1", "no verbs%!(EXTRA int=1)"),
        ("no verbs", "1 \"a\" nil 1.5 (list 1)", "no verbs%!(EXTRA int=1, string=a, <nil>, float64=1.5, []interface {}=[1])"),
        ("", "nil", "%!(EXTRA <nil>)"),
        ("", "", ""),
        ("%s %", "\"hello\"", "hello %!(NOVERB)"),
        ("%s %.2", "\"hello\"", "hello %!(NOVERB)"),
        ("%017091901790959340919092959340919017929593813360", "0", "%!(NOVERB)%!(EXTRA int=0)"),
        ("%184467440737095516170v", "0", "%!(NOVERB)%!(EXTRA int=0)"),
        ("%010.2", "\"12345\"", "%!(NOVERB)%!(EXTRA string=12345)"),
        ("%.", "3", "%!.(int=3)"),
        ("%[1]d", "1", "1"),
        ("%[2]d", "2 1", "1"),
        ("%[2]*[1]d", "2 5", "    2"),
        ("%[3]*.[2]*[1]f", "12.0 2 6", " 12.00"),
        ("%[1]*.[2]*[3]f", "6 2 12.0", " 12.00"),
        ("%.[1]*[3]f", "6 99 12.0", "12.000000"),
        ("%d %d %d %#[1]o %#o %#o", "11 12 13", "11 12 13 013 014 015"),
        ("%[d", "2 1", "%!d(BADINDEX)"),
        ("%]d", "2 1", "%!](int=2)d%!(EXTRA int=1)"),
        ("%[]d", "2 1", "%!d(BADINDEX)"),
        ("%[-3]d", "2 1", "%!d(BADINDEX)"),
        ("%[99]d", "2 1", "%!d(BADINDEX)"),
        ("%[3]", "2 1", "%!(NOVERB)"),
        ("%[1].2d", "5 6", "%!d(BADINDEX)"),
        ("%[1]2d", "2 1", "%!d(BADINDEX)"),
        ("%3.[2]d", "7", "%!d(BADINDEX)"),
        ("%.[2]d", "7", "%!d(BADINDEX)"),
        ("%d %d %d %#[1]o %#o %#o %#o", "11 12 13", "11 12 13 013 014 015 %!o(MISSING)"),
        ("%[5]d %[2]d %d", "1 2 3", "%!d(BADINDEX) 2 3"),
        ("%d %[3]d %d", "1 2", "1 %!d(BADINDEX) 2"),
        ("%.[]", "", "%!](BADINDEX)"),
        ("%.-3d", "42", "%!-(int=42)3d"),
        ("%2147483648d", "42", "%!(NOVERB)%!(EXTRA int=42)"),
        ("%-2147483648d", "42", "%!(NOVERB)%!(EXTRA int=42)"),
        ("%.2147483648d", "42", "%!(NOVERB)%!(EXTRA int=42)"),
        ("%d %s", "1", "1 %!s(MISSING)"),
        ("%☠", "\"hello\"", "%!☠(string=hello)"),
        ("%☠", "nil", "%!☠(<nil>)"),
        ("%☠", "0", "%!☠(int=0)"),
        ("%é%d", "1", "%!é(int=1)%!d(MISSING)"),
        ("héllo %d wörld", "3", "héllo 3 wörld"),
        ("%0-5d|", "42", "42   |"),
        ("%-05d|", "42", "42   |"),
        ("%-+5d|", "42", "+42  |"),
        ("%+ d", "42", "+42"),
        ("% +d", "42", "+42"),
        ("%#+.3q", "\"abcdef\"", "`abc`"),
        ("%03.6v", "(list 1 2.0 \"x\")", "[000001 002 00x]"),
        ("%03.0v", "(list 0 2.0 \"x\")", "[    002 000]"),
        ("%v %v", "\"a\"", "a %!v(MISSING)"),
        ("%[1]v %v", "1", "1 %!v(MISSING)"),
        ("%[2]v", "1", "%!v(BADINDEX)"),
        ("%*[2]d", "3 4", "  4"),
        ("%v|%s|%d", "nil nil nil", "<nil>|%!s(<nil>)|%!d(<nil>)"),
        ("%T %T %T %T %T %T", "1 1.0 \"\" true (list) (dict)", "int float64 string bool []interface {} map[string]interface {}"),
        ("%5.2x|", "\"hello\"", " 6865|"),
        ("%x %X", "1.0 255.5", "0x1p+00 0X1.FFP+07"),
        ("%v", "-14620.75", "-14620.75"),
        ("%v", "-2.0916015150093353e+19", "-2.0916015150093353e+19"),
        ("%v", "-916275.7972912014", "-916275.7972912014"),
        ("%v", "-164.0", "-164"),
        ("%v", "552.1", "552.1"),
        ("%v", "8.504001963907817e-52", "8.504001963907817e-52"),
        ("%.3g", "-14620.75", "-1.46e+04"),
        ("%.3g", "-2.0916015150093353e+19", "-2.09e+19"),
        ("%.3g", "-916275.7972912014", "-9.16e+05"),
        ("%.3g", "-164.0", "-164"),
        ("%.3g", "552.1", "552"),
        ("%.3g", "8.504001963907817e-52", "8.5e-52"),
        ("%e", "-14620.75", "-1.462075e+04"),
        ("%e", "-2.0916015150093353e+19", "-2.091602e+19"),
        ("%e", "-916275.7972912014", "-9.162758e+05"),
        ("%e", "-164.0", "-1.640000e+02"),
        ("%e", "552.1", "5.521000e+02"),
        ("%e", "8.504001963907817e-52", "8.504002e-52"),
        ("%.10f", "-14620.75", "-14620.7500000000"),
        ("%.10f", "-2.0916015150093353e+19", "-20916015150093352960.0000000000"),
        ("%.10f", "-916275.7972912014", "-916275.7972912014"),
        ("%.10f", "-164.0", "-164.0000000000"),
        ("%.10f", "552.1", "552.1000000000"),
        ("%.10f", "8.504001963907817e-52", "0.0000000000"),
        ("%x", "-14620.75", "-0x1.c8e6p+13"),
        ("%x", "-2.0916015150093353e+19", "-0x1.22449cf61200cp+64"),
        ("%x", "-916275.7972912014", "-0x1.bf66798368d67p+19"),
        ("%x", "-164.0", "-0x1.48p+07"),
        ("%x", "552.1", "0x1.140cccccccccdp+09"),
        ("%x", "8.504001963907817e-52", "0x1.45cf0231b3e14p-170"),
        ("%#g", "-14620.75", "-14620.75"),
        ("%#g", "-2.0916015150093353e+19", "-2.0916015150093353e+19"),
        ("%#g", "-916275.7972912014", "-916275.7972912014"),
        ("%#g", "-164.0", "-164.000"),
        ("%#g", "552.1", "552.100"),
        ("%#g", "8.504001963907817e-52", "8.504001963907817e-52"),
        ("%.15e", "-14620.75", "-1.462075000000000e+04"),
        ("%.15e", "-2.0916015150093353e+19", "-2.091601515009335e+19"),
        ("%.15e", "-916275.7972912014", "-9.162757972912014e+05"),
        ("%.15e", "-164.0", "-1.640000000000000e+02"),
        ("%.15e", "552.1", "5.521000000000000e+02"),
        ("%.15e", "8.504001963907817e-52", "8.504001963907817e-52"),
        ("%.17g", "-14620.75", "-14620.75"),
        ("%.17g", "-2.0916015150093353e+19", "-2.0916015150093353e+19"),
        ("%.17g", "-916275.7972912014", "-916275.79729120142"),
        ("%.17g", "-164.0", "-164"),
        ("%.17g", "552.1", "552.10000000000002"),
        ("%.17g", "8.504001963907817e-52", "8.5040019639078168e-52"),
        ("%g", "-14620.75", "-14620.75"),
        ("%g", "-2.0916015150093353e+19", "-2.0916015150093353e+19"),
        ("%g", "-916275.7972912014", "-916275.7972912014"),
        ("%g", "-164.0", "-164"),
        ("%g", "552.1", "552.1"),
        ("%g", "8.504001963907817e-52", "8.504001963907817e-52"),
        ("%.0f", "-14620.75", "-14621"),
        ("%.0f", "-2.0916015150093353e+19", "-20916015150093352960"),
        ("%.0f", "-916275.7972912014", "-916276"),
        ("%.0f", "-164.0", "-164"),
        ("%.0f", "552.1", "552"),
        ("%.0f", "8.504001963907817e-52", "0"),
        ("%.1e", "-14620.75", "-1.5e+04"),
        ("%.1e", "-2.0916015150093353e+19", "-2.1e+19"),
        ("%.1e", "-916275.7972912014", "-9.2e+05"),
        ("%.1e", "-164.0", "-1.6e+02"),
        ("%.1e", "552.1", "5.5e+02"),
        ("%.1e", "8.504001963907817e-52", "8.5e-52"),
        ("%#.5x", "-14620.75", "-0x1.c8e60p+13"),
        ("%#.5x", "-2.0916015150093353e+19", "-0x1.2244ap+64"),
        ("%#.5x", "-916275.7972912014", "-0x1.bf668p+19"),
        ("%#.5x", "-164.0", "-0x1.48000p+07"),
        ("%#.5x", "552.1", "0x1.140cdp+09"),
        ("%#.5x", "8.504001963907817e-52", "0x1.45cf0p-170"),
        ("%G", "-14620.75", "-14620.75"),
        ("%G", "-2.0916015150093353e+19", "-2.0916015150093353E+19"),
        ("%G", "-916275.7972912014", "-916275.7972912014"),
        ("%G", "-164.0", "-164"),
        ("%G", "552.1", "552.1"),
        ("%G", "8.504001963907817e-52", "8.504001963907817E-52"),
        ]);
    }

    /// The `printf` cases of the conformance suite (values are float64,
    /// literals int).
    #[test]
    fn conformance_printf() {
        check(&[
            ("%v", "1", "1"),
            ("%v", "1.5", "1.5"),
            ("%v", "true", "true"),
            ("%v", "(list 1 \"a\" nil)", "[1 a <nil>]"),
            ("%v", "(dict \"b\" 1 \"a\" (list 2))", "map[a:[2] b:1]"),
            ("%v", "nil", "<nil>"),
            (
                "%v",
                "(dict \"k\" \"v\" \"b\" 2.0 \"a\" 1.0)",
                "map[a:1 b:2 k:v]",
            ),
            (
                "%+v",
                "(dict \"k\" \"v\" \"b\" 2.0 \"a\" 1.0)",
                "map[a:1 b:2 k:v]",
            ),
            (
                "%#v",
                "(dict \"k\" \"v\" \"b\" 2.0 \"a\" 1.0)",
                "map[string]interface {}{\"a\":1, \"b\":2, \"k\":\"v\"}",
            ),
            ("%#v", "(list 1 \"a\")", "[]interface {}{1, \"a\"}"),
            ("%#v", "nil", "<nil>"),
            ("%#v", "\"s\"", "\"s\""),
            ("%#v", "1.0", "1"),
            ("%#v", "1000000.0", "1e+06"),
            ("%#v", "(dict)", "map[string]interface {}{}"),
            ("%#v", "(list)", "[]interface {}{}"),
            ("%5d|", "42", "   42|"),
            ("%-5d|", "42", "42   |"),
            ("%05d", "42", "00042"),
            ("%05d", "-42", "-0042"),
            ("% d", "42", " 42"),
            ("%d", "3.0", "%!d(float64=3)"),
            ("%d", "\"a\"", "%!d(string=a)"),
            ("%x", "255", "ff"),
            ("%X", "255", "FF"),
            ("%x", "\"hi\"", "6869"),
            ("%X", "\"hi\"", "6869"),
            ("%#x", "255", "0xff"),
            ("%o", "8", "10"),
            ("%O", "8", "0o10"),
            ("%b", "5", "101"),
            ("%U", "233", "U+00E9"),
            ("%q", "65", "'A'"),
            ("%e", "1234.5678", "1.234568e+03"),
            ("%E", "1234.5678", "1.234568E+03"),
            ("%.2f", "3.14159", "3.14"),
            ("%8.3f|", "3.14159", "   3.142|"),
            ("%-8.2f|", "3.14159", "3.14    |"),
            ("%05.2f", "3.14159", "03.14"),
            ("%.0f", "2.5", "2"),
            ("%.0f", "3.5", "4"),
            ("%g", "1e6", "1e+06"),
            ("%g", "0.000012", "1.2e-05"),
            ("%g", "100000.0", "100000"),
            ("%f", "1", "%!f(int=1)"),
            ("%f", "1000000.0", "1000000.000000"),
            ("%.1f", "1.5", "1.5"),
            ("%10s|", "\"str\"", "       str|"),
            ("%-10s|", "\"str\"", "str       |"),
            ("%.2s", "\"str\"", "st"),
            ("%s", "1", "%!s(int=1)"),
            ("%s", "true", "%!s(bool=true)"),
            ("%s", "nil", "%!s(<nil>)"),
            ("%q", "\"a\\\"b\\n\"", "\"a\\\"b\\n\""),
            ("%q", "(list \"a\" \"b\")", "[\"a\" \"b\"]"),
            ("%#q", "\"plain\"", "`plain`"),
            ("%+q", "\"é\"", "\"\\u00e9\""),
            ("%t", "true", "true"),
            ("%t", "1", "%!t(int=1)"),
            ("%T", "1.5", "float64"),
            ("%T", "\"s\"", "string"),
            ("%T", "nil", "<nil>"),
            ("%T", "(dict)", "map[string]interface {}"),
            ("%T", "(list)", "[]interface {}"),
            ("%T", "true", "bool"),
            ("%%", "", "%"),
            ("%d%%", "50", "50%"),
            ("%!", "", "%!!(MISSING)"),
            ("%z", "1", "%!z(int=1)"),
            ("%v", "1 2", "1%!(EXTRA int=2)"),
            ("%[2]v %[1]v", "1 2", "2 1"),
            ("%*d|", "5 42", "   42|"),
            ("%.*f", "2 3.14159", "3.14"),
            ("%x", "(list 10 11)", "[a b]"),
            (
                "%v",
                "(list (list 1) (dict \"a\" nil))",
                "[[1] map[a:<nil>]]",
            ),
            (
                "%s",
                "(dict \"k\" \"v\" \"b\" 2.0 \"a\" 1.0)",
                "map[a:%!s(float64=1) b:%!s(float64=2) k:v]",
            ),
            (
                "%d",
                "(list 1.0 2.0 3.0)",
                "[%!d(float64=1) %!d(float64=2) %!d(float64=3)]",
            ),
            ("%5.1f|", "-0.05", " -0.1|"),
            ("%v", "0.1", "0.1"),
            ("%v", "1e12", "1e+12"),
            ("%v", "1000000000000", "1000000000000"),
            ("%v", "1e-5", "1e-05"),
            ("%v", "123456789.0", "1.23456789e+08"),
            ("%v", "1e20", "1e+20"),
            ("%v", "0.3333333333333333", "0.3333333333333333"),
            ("%08.3f", "-1.5", "-001.500"),
            ("%s", "(bytes \"hi\")", "hi"),
            ("no verbs", "1", "no verbs%!(EXTRA int=1)"),
        ]);
    }

    /// Expectations from Go's own fmt tests, for kinds a template cannot
    /// write literally (unsigned integers, complex numbers, byte slices with
    /// flags).
    #[test]
    fn go_fmt_kinds() {
        check(&[
            ("%d", "(uint64 -1)", "18446744073709551615"),
            ("%#v", "(uint64 -1)", "0xffffffffffffffff"),
            ("%x", "(uint64 -1)", "ffffffffffffffff"),
            ("%#v", "(uint8 7)", "0x7"),
            ("%v", "(uint8 7)", "7"),
            ("%q", "(uint 0)", "'\\x00'"),
            ("%c", "(uint64 68719476735)", "\u{fffd}"),
            ("%q", "(uint64 68719476735)", "'\u{fffd}'"),
            ("%d", "(int64 -9223372036854775808)", "-9223372036854775808"),
            (
                "%b",
                "(int64 -9223372036854775808)",
                "-1000000000000000000000000000000000000000000000000000000000000000",
            ),
            ("%d", "(int8 -128)", "-128"),
            ("%T", "(uint8 1)", "uint8"),
            ("%v", "(complex 1 2)", "(1+2i)"),
            ("%T", "(complex 1 2)", "complex128"),
            ("%.3f", "(complex -1 -2)", "(-1.000-2.000i)"),
            ("%+.3g", "(complex 1 2)", "(+1+2i)"),
            ("%7.2f", "(complex 1 2)", "(   1.00  +2.00i)"),
            ("%+07.2f", "(complex -1 -2)", "(-001.00-002.00i)"),
            (
                "%f",
                "(complex (float64 \"+Inf\") (float64 \"+Inf\"))",
                "(+Inf+Infi)",
            ),
            (
                "% f",
                "(complex (float64 \"NaN\") (float64 \"NaN\"))",
                "( NaN+NaNi)",
            ),
            ("%#g", "(complex 1 2)", "(1.00000+2.00000i)"),
            (
                "%b",
                "(complex 1 2)",
                "(4503599627370496p-52+4503599627370496p-51i)",
            ),
            ("%d", "(complex 1 2)", "%!d(complex128=(1+2i))"),
            (
                "%06v",
                "(list (complex 10 10) 10)",
                "[(000010+00010i) 000010]",
            ),
            ("%#v", "(bytes \"\\x01\\x0bo\")", "[]byte{0x1, 0xb, 0x6f}"),
            (
                "%#6v",
                "(bytes \"\\x01\\x0bo\")",
                "[]byte{   0x1,    0xb,   0x6f}",
            ),
            (
                "%#06v",
                "(bytes \"\\x01\\x0bo\")",
                "[]byte{0x000001, 0x00000b, 0x00006f}",
            ),
            (
                "%#-6v",
                "(bytes \"\\x01\\x0bo\")",
                "[]byte{0x1   , 0xb   , 0x6f  }",
            ),
            ("% v", "(bytes \"\\x01\\x0bo\")", "[ 1  11  111]"),
            ("%+d", "(bytes \"\\x01\\x0bo\")", "[+1 +11 +111]"),
            (
                "%# -6d",
                "(bytes \"\\x01\\x0bo\")",
                "[ 1      11     111  ]",
            ),
            ("%#012v", "(bytes \"\")", "[]byte{}"),
            ("% 02x", "(bytes \"\\x01\\x02\\x03\")", "01 02 03"),
            ("%# 010x", "(bytes \"\\xab\\xcd\")", "00xab 0xcd"),
            ("%#-10X", "(bytes \"\\xab\\xcd\")", "0XABCD    "),
            ("%c", "(bytes \"ABC\")", "[A B C]"),
            ("%U", "(bytes \"ABC\")", "[U+0041 U+0042 U+0043]"),
            (
                "%☠",
                "(bytes \"\\x00\\x01\")",
                "[%!☠(uint8=0) %!☠(uint8=1)]",
            ),
            (
                "%#v",
                "(list (bytes \"hi\"))",
                "[]interface {}{[]uint8{0x68, 0x69}}",
            ),
            ("%q", "(bytes \"abc\\xffdef\")", "\"abc\\xffdef\""),
            (
                "%.1q",
                "(bytes \"\\xe6\\x97\\xa5\\xe6\\x9c\\xac\")",
                "\"日\"",
            ),
            ("%x", "(float64 1.0)", "0x1p+00"),
            ("%#.0x", "123.0", "0x1.p+07"),
            ("%#.4x", "123.0", "0x1.ec00p+06"),
            ("% .3X", "-1.0", "-0X1.000P+00"),
            ("%+.3x", "0.0", "+0x0.000p+00"),
            ("%b", "1.0", "4503599627370496p-52"),
            ("%#g", "1e-323", "1.00000e-323"),
            ("%#g", "123456.0", "123456."),
            ("%#g", "1234567.0", "1.234567e+06"),
            ("%#.0g", "1100000.0", "1.e+06"),
            ("%#.4g", "0.012", "0.01200"),
            ("%#.4g", "0.0", "0.000"),
            ("%#9.4g", "1.0", "    1.000"),
            (
                "%.68f",
                "-1.0",
                "-1.00000000000000000000000000000000000000000000000000000000000000000000",
            ),
            (
                "%068d",
                "-1",
                "-0000000000000000000000000000000000000000000000000000000000000000001",
            ),
            ("%#.8x", "42", "0x0000002a"),
            ("%#14.6U", "8984", "  U+002318 '⌘'"),
            ("%#-014.6U", "8984", "U+002318 '⌘'  "),
            ("%U", "-1", "U+FFFFFFFFFFFFFFFF"),
            ("%+-010q", "8984", "'\\u2318'  "),
            ("%+010q", "\"⌘\"", "00\"\\u2318\""),
            ("%#+-8q", "\"\\b\"", "\"\\b\"    "),
            ("%q", "\"\\U0010ffff\"", "\"\\U0010ffff\""),
            ("%#q", "\"\\U0010ffff\"", "`\u{10ffff}`"),
            ("%q", "1114111", "'\\U0010ffff'"),
            ("%c", "-1", "\u{fffd}"),
            ("%c", "56448", "\u{fffd}"),
            ("%.0c", "8984", "⌘"),
        ]);
    }

    #[test]
    fn format_float_forms() {
        let cases: &[(f64, u8, i32, &str)] = &[
            (1e6, b'g', -1, "1e+06"),
            (1e5, b'g', -1, "100000"),
            (1e-5, b'g', -1, "1e-05"),
            (1e-4, b'g', -1, "0.0001"),
            (-0.0, b'g', -1, "-0"),
            (0.0, b'e', -1, "0e+00"),
            (f64::INFINITY, b'f', 2, "+Inf"),
            (f64::NEG_INFINITY, b'g', -1, "-Inf"),
            (f64::NAN, b'e', 3, "NaN"),
            (1.5, b'f', -1, "1.5"),
            (1e21, b'f', -1, "1000000000000000000000"),
            (123.456, b'e', -1, "1.23456e+02"),
            (123.456, b'E', 2, "1.23E+02"),
            (0.5, b'f', 0, "0"),
            (1.5, b'f', 0, "2"),
            (0.125, b'f', 2, "0.12"),
            (0.375, b'f', 2, "0.38"),
            (-0.0001, b'f', 2, "-0.00"),
            (1e100, b'e', 0, "1e+100"),
            (5e-324, b'g', -1, "5e-324"),
            (f64::MAX, b'g', -1, "1.7976931348623157e+308"),
            (100.0, b'g', 3, "100"),
            (1000.0, b'g', 3, "1e+03"),
            (0.0001234, b'G', 2, "0.00012"),
            (0.00001234, b'G', 2, "1.2E-05"),
            (1.0, b'g', 0, "1"),
            (255.5, b'X', -1, "0X1.FFP+07"),
            (1.0, b'x', 0, "0x1p+00"),
            (1.0, b'b', -1, "4503599627370496p-52"),
            (0.0, b'b', -1, "0p-1074"),
            (1.0, b'z', -1, "%z"),
        ];
        for (f, fmt, prec, want) in cases {
            assert_eq!(
                format_float(*f, *fmt, *prec),
                *want,
                "format_float({f}, {}, {prec})",
                *fmt as char
            );
        }
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("abc"), "\"abc\"");
        assert_eq!(quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(quote("\u{7}\u{8}\u{c}\r\t\u{b}"), "\"\\a\\b\\f\\r\\t\\v\"");
        assert_eq!(quote("\u{0}\u{1f}\u{7f}"), "\"\\x00\\x1f\\x7f\"");
        assert_eq!(quote("héllo 日本 ☺"), "\"héllo 日本 ☺\"");
        assert_eq!(
            quote("\u{ad}\u{a0}\u{2028}\u{feff}"),
            "\"\\u00ad\\u00a0\\u2028\\ufeff\""
        );
        assert_eq!(quote("\u{e0001}\u{10ffff}"), "\"\\U000e0001\\U0010ffff\"");
        assert_eq!(quote("😀"), "\"😀\"");
        assert_eq!(quote_to_ascii("é😀"), "\"\\u00e9\\U0001f600\"");
        assert_eq!(quote_rune('A'), "'A'");
        assert_eq!(quote_rune('\''), "'\\''");
        assert_eq!(quote_rune('"'), "'\"'");
        assert_eq!(quote_rune('\n'), "'\\n'");
        assert_eq!(quote_rune('\u{e00}'), "'\\u0e00'");
        assert_eq!(quote_rune('ÿ'), "'ÿ'");
        assert_eq!(quote_rune_to_ascii('ÿ'), "'\\u00ff'");
        assert!(can_backquote("a\tb"));
        assert!(!can_backquote("a`b"));
        assert!(!can_backquote("a\nb"));
        assert!(!can_backquote("\u{feff}"));
        assert!(can_backquote("日本"));
        assert!(is_print(' ') && is_print('é') && is_print('日') && is_print('😀'));
        assert!(!is_print('\u{a0}') && !is_print('\u{ad}') && !is_print('\u{7f}'));
        assert!(!is_print('\u{2028}') && !is_print('\u{e000}') && !is_print('\u{378}'));
    }

    #[test]
    fn sprint_spacing() {
        let p = |s: &str| sprint(&parse_args(s));
        assert_eq!(p("\"a\" \"b\""), "ab");
        assert_eq!(p("\"a\" 1 \"b\""), "a1b");
        assert_eq!(p("1 2 \"c\" 3 4"), "1 2c3 4");
        assert_eq!(p(""), "");
        assert_eq!(p("nil 1 nil"), "<nil> 1 <nil>");
        assert_eq!(p("\"a\" nil \"b\""), "a<nil>b");
        assert_eq!(p("\"\" \"\" 1 \"\" 2 3"), "12 3");
        assert_eq!(p("1e6 100000.0 1.5"), "1e+06 100000 1.5");
        assert_eq!(
            p("(list \"a\" \"b\" \"c\") (dict \"k\" \"v\" \"b\" 2.0 \"a\" 1.0)"),
            "[a b c] map[a:1 b:2 k:v]"
        );
        assert_eq!(p("1 (list nil) nil (dict)"), "1 [<nil>] <nil> map[]");
        assert_eq!(sprint(&[Value::Invalid, Value::int(1)]), "<nil> 1");
        let l = |s: &str| sprintln(&parse_args(s));
        assert_eq!(l("\"a\" \"b\""), "a b\n");
        assert_eq!(l(""), "\n");
        assert_eq!(l("1 \"a\" \"b\" 2 nil"), "1 a b 2 <nil>\n");
    }

    #[test]
    fn format_value_forms() {
        let f = |s: &str| format_value(&parse_args(s)[0]);
        assert_eq!(format_value(&Value::Nil), "<nil>");
        assert_eq!(format_value(&Value::Invalid), "<nil>");
        assert_eq!(f("(dict \"b\" 2 \"a\" 1)"), "map[a:1 b:2]");
        assert_eq!(f("(list 1 2 3)"), "[1 2 3]");
        assert_eq!(f("(bytes \"hi\")"), "[104 105]");
        assert_eq!(f("(complex 1 -2)"), "(1-2i)");
        assert_eq!(f("-0.0"), "-0");
        assert_eq!(f("(float64 \"+Inf\")"), "+Inf");
        assert_eq!(f("(float64 \"NaN\")"), "NaN");
        assert_eq!(f("\"é\""), "é");
        let typed = Value::List(List::with_kind(
            vec![Value::str("a"), Value::str("b")],
            ListKind::String,
        ));
        assert_eq!(format_value(&typed), "[a b]");
        assert_eq!(
            sprintf("%#v", std::slice::from_ref(&typed)),
            "[]string{\"a\", \"b\"}"
        );
        assert_eq!(sprintf("%T", &[typed]), "[]string");
        let named = Value::Map(MapRef::with_kind(
            [("x".to_string(), Value::int(1))].into_iter().collect(),
            MapKind::Named("chartutil.Values"),
        ));
        assert_eq!(format_value(&named), "map[x:1]");
        assert_eq!(
            sprintf("%#v", std::slice::from_ref(&named)),
            "chartutil.Values{\"x\":1}"
        );
        assert_eq!(sprintf("%T", &[named]), "chartutil.Values");
        let nested = parse_args("(dict \"a\" (dict \"b\" (list 1 nil \"x\")))");
        assert_eq!(
            sprintf("%#v", &nested),
            "map[string]interface {}{\"a\":map[string]interface {}{\"b\":[]interface {}{1, interface {}(nil), \"x\"}}}"
        );
    }

    #[derive(Debug)]
    struct Version;

    impl Object for Version {
        fn type_name(&self) -> String {
            "*semver.Version".into()
        }
        fn kind(&self) -> Kind {
            Kind::Ptr
        }
        fn format_v(&self) -> String {
            "1.2.3".into()
        }
        fn format_sharp_v(&self) -> String {
            "&semver.Version{}".into()
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    #[test]
    fn objects_print_through_their_methods() {
        let v = Value::object(Version);
        let one = std::slice::from_ref(&v);
        assert_eq!(format_value(&v), "1.2.3");
        assert_eq!(
            sprintf(
                "%s|%7v|%-7s|%q|%x",
                &[v.clone(), v.clone(), v.clone(), v.clone(), v.clone()]
            ),
            "1.2.3|  1.2.3|1.2.3  |\"1.2.3\"|312e322e33"
        );
        assert_eq!(sprintf("%T", one), "*semver.Version");
        assert_eq!(sprintf("%#v", one), "&semver.Version{}");
        assert_eq!(sprintf("%d", one), "%!d(*semver.Version=1.2.3)");
        assert_eq!(
            sprint(&[Value::list(vec![v.clone()]), v.clone()]),
            "[1.2.3] 1.2.3"
        );
        let p = sprintf("%p", one);
        assert!(p.starts_with("0xc"), "{p}");
    }

    #[test]
    fn functions_and_pointers() {
        let f = Value::Func(Func::new(&[crate::value::Ty::String], |_, _| {
            Ok(Value::Nil)
        }));
        let one = std::slice::from_ref(&f);
        assert_eq!(sprintf("%T", one), "func(string) interface {}");
        assert!(sprintf("%v", one).starts_with("0xc"));
        assert!(sprintf("%#v", one).starts_with("(func(string) interface {})(0xc"));
        assert_eq!(
            sprintf("%z", one).split('=').next(),
            Some("%!z(func(string) interface {}")
        );
        let m = parse_args("(dict \"a\" 1)");
        assert!(sprintf("%p", &m).starts_with("0xc"));
        assert!(sprintf("%#p", &m).starts_with('c'));
        assert_eq!(sprintf("%p", &parse_args("27")), "%!p(int=27)");
        assert_eq!(sprintf("%p", &parse_args("nil")), "%!p(<nil>)");
    }

    #[test]
    fn self_containing_map_does_not_overflow() {
        let m = MapRef::new(Map::new());
        m.insert("self", Value::Map(m.clone()));
        let out = format_value(&Value::Map(m));
        assert!(out.starts_with("map[self:map[self:"));
        assert!(out.contains("..."));
    }

    #[test]
    fn wrap_verb_outside_errorf() {
        check(&[
            ("%w", "1", "%!w(int=1)"),
            ("%w", "\"x\"", "%!w(string=x)"),
            ("%w", "nil", "%!w(<nil>)"),
            ("%w", "(list 1 2)", "%!w([]interface {}=[1 2])"),
            (
                "%w",
                "(dict \"a\" 1)",
                "%!w(map[string]interface {}=map[a:1])",
            ),
        ]);
    }
}
