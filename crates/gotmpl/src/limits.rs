//! Bounds on what a template run may produce besides its output: error
//! messages. A template that fails deep inside nested `template`, `include`
//! or `tpl` calls wraps the cause once per level; kept whole, a failure
//! 10,000 levels down is a megabyte of text that nobody can read.

/// The longest error message kept whole.
pub(crate) const MAX_ERROR_BYTES: usize = 4096;

/// `msg` cut to 4 KiB: its start (the outermost context) and
/// its end (the innermost cause) are kept, and the middle is replaced by a
/// note saying how much was cut.
pub fn cap_message(msg: String) -> String {
    if msg.len() <= MAX_ERROR_BYTES {
        return msg;
    }
    let head = floor_char_boundary(&msg, MAX_ERROR_BYTES * 5 / 8);
    let tail = ceil_char_boundary(&msg, msg.len() - MAX_ERROR_BYTES / 4);
    format!(
        "{}{NOTE_START}{}{NOTE_END}{}",
        &msg[..head],
        originally(&msg[head..tail]),
        &msg[tail..]
    )
}

/// Whether [`cap_message`] cut something out of `msg`.
pub fn was_capped(msg: &str) -> bool {
    msg.contains(NOTE_END)
}

const NOTE_START: &str = " … [";
const NOTE_END: &str = " bytes of nested errors cut] … ";

/// How many bytes `cut` stood for before earlier caps: notes left by a
/// cap one level down count as what they cut, so the final note tells
/// how much of the whole chain is missing.
fn originally(cut: &str) -> usize {
    let mut total = cut.len();
    let mut rest = cut;
    while let Some(i) = rest.find(NOTE_START) {
        let after = &rest[i + NOTE_START.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        match (
            after[..digits].parse::<usize>(),
            after[digits..].starts_with(NOTE_END),
        ) {
            (Ok(n), true) => {
                total = total + n - (NOTE_START.len() + digits + NOTE_END.len());
                rest = &after[digits + NOTE_END.len()..];
            }
            _ => rest = after,
        }
    }
    total
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_caps_add_up() {
        let mut msg = "cause".to_string();
        let mut whole = msg.clone();
        for _ in 0..200 {
            msg = cap_message(format!("level wrapping the one below: {msg}"));
            whole = format!("level wrapping the one below: {whole}");
        }
        assert!(msg.len() <= MAX_ERROR_BYTES + 64);
        let cut: usize = msg
            .split(NOTE_START)
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let note = format!("{NOTE_START}{cut}{NOTE_END}");
        assert_eq!(msg.matches(NOTE_START).count(), 1, "{msg}");
        assert_eq!(msg.len() - note.len() + cut, whole.len());
    }

    #[test]
    fn short_messages_stay_whole() {
        assert_eq!(cap_message("boom".into()), "boom");
    }

    #[test]
    fn long_messages_keep_both_ends_and_say_what_was_cut() {
        let msg = format!("outer: {}inner cause", "é".repeat(10_000));
        let capped = cap_message(msg.clone());
        assert!(capped.len() <= MAX_ERROR_BYTES + 64, "{}", capped.len());
        assert!(capped.starts_with("outer: é"));
        assert!(capped.ends_with("éinner cause"));
        let cut: usize = capped
            .split("… [")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        // What is kept and what is cut add up to the original.
        let note = format!(" … [{cut} bytes of nested errors cut] … ");
        assert_eq!(capped.len() - note.len() + cut, msg.len());
    }
}
