//! Go's `fmt` printer: the flag set, `printArg` for an operand and
//! `printValue` for nested elements, verb by verb, with Go's error forms.

use gostd::strconv::{
    append_quote, append_quote_to_ascii, can_backquote, format_float, quote_rune,
    quote_rune_to_ascii,
};
use gostd::unicode::is_print;
use gostd::utf8::decode_rune;

use crate::value::{Kind, UintKind, Value};

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

pub(super) struct Printer {
    pub(super) buf: String,
    fl: Flags,
    wid: i64,
    prec: i64,
    erroring: bool,
    reordered: bool,
    good_arg_num: bool,
}

impl Printer {
    pub(super) fn new() -> Self {
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

    pub(super) fn do_printf(&mut self, format: &str, a: &[Value]) {
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
    pub(super) fn print_arg(&mut self, arg: &Value, verb: char) {
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
        if self.fl.sharp && can_backquote(b) {
            let s = format!("`{}`", go_string_lossy(b));
            self.pad(&s);
            return;
        }
        let mut q = String::with_capacity(b.len() + 2);
        if self.fl.plus {
            append_quote_to_ascii(&mut q, b);
        } else {
            append_quote(&mut q, b);
        }
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
        let s = format_float(v, verb, prec.clamp(-1, i32::MAX as i64) as i32, 64);
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
