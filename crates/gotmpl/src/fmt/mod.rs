//! Go's `fmt` printing (`Sprint`, `Sprintln`, `Sprintf`) over template
//! [`Value`]s. The `strconv` and `unicode` parts it rests on (`FormatFloat`,
//! `Quote`, `QuoteRune`, `IsPrint`) are [`gostd`]'s.
//!
//! Every chart's `printf`, `print`, `toString` and `quote` goes through this
//! module, so it follows Go's output byte for byte: verbs apply element-wise
//! inside lists and maps, flags and widths apply to each element, and the
//! error forms (`%!d(string=hi)`, `%!(EXTRA int=1)`, `%!d(MISSING)`, ...) are
//! Go's. The structure mirrors Go's printer (a flag set, `printArg` for an
//! operand, `printValue` for nested elements) because many of Go's quirks
//! come from exactly where each flag is consulted.

mod printer;

use crate::value::{Kind, Value};
use printer::Printer;

/// Go's `fmt.Sprint`: operands formatted with `%v`, with a space between two
/// operands when neither of them is a string.
pub(crate) fn sprint(args: &[Value]) -> String {
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
pub(crate) fn sprintln(args: &[Value]) -> String {
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

/// Go's `strconv.Quote` of a template string (whose stray bytes are
/// escaped as `\xff`, see [`crate::gostr`]).
pub fn quote(s: &str) -> String {
    gostd::strconv::quote(crate::gostr::to_bytes(s))
}

#[cfg(test)]
mod tests;
