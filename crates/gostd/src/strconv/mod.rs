//! Go's `strconv`: float formatting ([`format_float`], and the float text of
//! `encoding/json` in [`format_json_float`]) and string quoting ([`quote`],
//! [`quote_rune`], [`can_backquote`]).

mod ftoa;
mod quote;

pub use ftoa::{append_float, append_json_float, format_float, format_json_float};
pub use quote::{
    append_quote, append_quote_to_ascii, can_backquote, quote, quote_rune, quote_rune_to_ascii,
    quote_to_ascii,
};

/// Go's `strconv.ParseBool`.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
