//! The lexer: splits template text into items exactly as Go's
//! `text/template/parse` lexer does (same trim-marker, comment, number and
//! quoting rules, so parse errors read the same).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ItemType {
    Error,
    Bool,
    Char,
    CharConstant,
    Comment,
    Complex,
    Assign,
    Declare,
    Eof,
    Field,
    Identifier,
    LeftDelim,
    LeftParen,
    Number,
    Pipe,
    RawString,
    RightDelim,
    RightParen,
    Space,
    String,
    Text,
    Variable,
    // Keywords.
    Block,
    Break,
    Continue,
    Dot,
    Define,
    Else,
    End,
    If,
    Nil,
    Range,
    Template,
    With,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Item<'a> {
    pub typ: ItemType,
    /// Byte offset of the item in the input.
    pub pos: usize,
    /// A slice of the input (empty for `Error`, whose message is
    /// [`Lexed::error`]), so lexing allocates nothing per token.
    pub val: &'a str,
    /// 1-based line of the item's start.
    pub line: usize,
}

/// The items of an input and, if lexing stopped at an error (the last
/// item is then `Error`), its message.
#[cfg(test)]
pub(crate) struct Lexed<'a> {
    pub items: Vec<Item<'a>>,
    pub error: String,
}

impl Item<'_> {
    /// How Go's parser names an item in "unexpected X" errors (an `Error`
    /// item is reported by its message instead).
    pub(crate) fn describe(&self) -> String {
        match self.typ {
            ItemType::Eof => "EOF".to_string(),
            ItemType::Error => String::new(),
            ItemType::Text | ItemType::String | ItemType::RawString
                if self.val.chars().count() > 10 =>
            {
                let s: String = self.val.chars().take(10).collect();
                format!("{:?}...", s)
            }
            ItemType::Block
            | ItemType::Break
            | ItemType::Continue
            | ItemType::Define
            | ItemType::Else
            | ItemType::End
            | ItemType::If
            | ItemType::Nil
            | ItemType::Range
            | ItemType::Template
            | ItemType::With
            | ItemType::Dot => format!("<{}>", self.val),
            _ => format!("{:?}", self.val),
        }
    }
}

/// How many items [`Lexer::item`] lexes beyond the one asked for.
const LEX_AHEAD: usize = 8;

const LEFT: &str = "{{";
const RIGHT: &str = "}}";
const LEFT_COMMENT: &str = "/*";
const RIGHT_COMMENT: &str = "*/";

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// ASCII letters, digits and `_`, as a table: names are scanned a byte at
/// a time, and one load beats the range checks.
static ASCII_WORD: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 128 {
        t[b] = (b as u8).is_ascii_alphanumeric() || b == b'_' as usize;
        b += 1;
    }
    t
};

fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

fn keyword(s: &str) -> Option<ItemType> {
    Some(match s {
        "." => ItemType::Dot,
        "block" => ItemType::Block,
        "break" => ItemType::Break,
        "continue" => ItemType::Continue,
        "define" => ItemType::Define,
        "else" => ItemType::Else,
        "end" => ItemType::End,
        "if" => ItemType::If,
        "range" => ItemType::Range,
        "nil" => ItemType::Nil,
        "template" => ItemType::Template,
        "with" => ItemType::With,
        _ => return None,
    })
}

/// Lexes the whole input. The last item is `Eof` or `Error`.
#[cfg(test)]
pub(crate) fn lex(input: &str) -> Lexed<'_> {
    let mut l = Lexer::new(input);
    let mut items = Vec::new();
    while let Some(it) = l.item(items.len()) {
        items.push(it);
    }
    Lexed {
        items,
        error: l.error,
    }
}

/// Lexes on demand: the parser asks for items by index, and the lexer
/// keeps only those the parser may still look back at, so the items of a
/// whole text never exist at once. The lexer's buffer is the parser's
/// look-back window: an item is written once and read in place.
pub(crate) struct Lexer<'a> {
    input: &'a str,
    /// Items lexed and kept: item `base + i` is `items[i]`.
    items: Vec<Item<'a>>,
    base: usize,
    state: State,
    /// The `Eof` or `Error` item, once lexing is done.
    end: Item<'a>,
    error: String,
    start: usize,
    pos: usize,
    line: usize,
    start_line: usize,
    paren_depth: i32,
}

#[derive(Clone, Copy)]
enum State {
    Text,
    LeftDelim,
    Comment,
    RightDelim(bool),
    Inside,
    Done,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(input: &'a str) -> Lexer<'a> {
        Lexer {
            input,
            items: Vec::with_capacity(64),
            base: 0,
            state: State::Text,
            end: Item {
                typ: ItemType::Eof,
                pos: 0,
                val: "",
                line: 1,
            },
            error: String::new(),
            start: 0,
            pos: 0,
            line: 1,
            start_line: 1,
            paren_depth: 0,
        }
    }

    /// Item `idx` of the input (counting from 0), lexing up to it if need
    /// be; `None` past the `Eof` or `Error` item. `idx` must not be before
    /// what [`Lexer::forget_before`] let go.
    #[inline]
    pub(crate) fn item(&mut self, idx: usize) -> Option<Item<'a>> {
        match self.items.get(idx - self.base) {
            Some(it) => Some(*it),
            None => self.lex_to(idx),
        }
    }

    /// Lexes a few items past `idx` while at it: the parser nearly always
    /// goes on to them, and one call per item cost more than the lexing.
    #[inline(never)]
    fn lex_to(&mut self, idx: usize) -> Option<Item<'a>> {
        while self.base + self.items.len() <= idx + LEX_AHEAD {
            self.state = match self.state {
                State::Text => self.lex_text(),
                State::LeftDelim => self.lex_left_delim(),
                State::Comment => self.lex_comment(),
                State::RightDelim(trim) => self.lex_right_delim(trim),
                State::Inside => self.lex_inside(),
                State::Done => break,
            };
            if let (State::Done, Some(last)) = (self.state, self.items.last()) {
                // Every path to Done emits Eof or Error first.
                self.end = *last;
            }
        }
        self.items.get(idx - self.base).copied()
    }

    /// The `Eof` or `Error` item that ends the input, once [`Lexer::item`]
    /// has returned `None` (before that, an `Eof` at the start).
    pub(crate) fn end_item(&self) -> Item<'a> {
        self.end
    }

    /// The index of the first item still kept.
    pub(crate) fn base(&self) -> usize {
        self.base
    }

    /// Lets go of the items before `idx`, which the parser will not look
    /// back at again.
    pub(crate) fn forget_before(&mut self, idx: usize) {
        let n = idx.saturating_sub(self.base).min(self.items.len());
        self.items.drain(..n);
        self.base += n;
    }

    /// The message of the `Error` item, once lexing stopped at one.
    pub(crate) fn error_message(&self) -> &str {
        &self.error
    }

    fn rest(&self) -> &'a str {
        &self.input[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        // Template actions are nearly all ASCII: decode only what is not.
        match self.input.as_bytes().get(self.pos) {
            None => None,
            Some(&b) if b < 0x80 => Some(b as char),
            Some(_) => self.rest().chars().next(),
        }
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn backup(&mut self, c: Option<char>) {
        if let Some(c) = c {
            self.pos -= c.len_utf8();
            if c == '\n' {
                self.line -= 1;
            }
        }
    }

    #[inline]
    fn emit(&mut self, typ: ItemType) {
        let val = &self.input[self.start..self.pos];
        self.items.push(Item {
            typ,
            pos: self.start,
            val,
            line: self.start_line,
        });
        self.start = self.pos;
        self.start_line = self.line;
    }

    fn ignore(&mut self) {
        self.start = self.pos;
        self.start_line = self.line;
    }

    /// Moves `pos` forward by `n` bytes, counting newlines.
    fn skip(&mut self, n: usize) {
        self.line +=
            memchr::memchr_iter(b'\n', &self.input.as_bytes()[self.pos..self.pos + n]).count();
        self.pos += n;
    }

    fn error(&mut self, msg: String) -> State {
        self.items.push(Item {
            typ: ItemType::Error,
            pos: self.start,
            val: "",
            line: self.start_line,
        });
        self.error = msg;
        State::Done
    }

    fn accept(&mut self, valid: &str) -> bool {
        match self.peek() {
            Some(c) if valid.contains(c) => {
                self.next();
                true
            }
            _ => false,
        }
    }

    fn accept_run(&mut self, valid: &str) {
        while self.accept(valid) {}
    }

    fn has_left_trim(s: &str) -> bool {
        let b = s.as_bytes();
        b.len() >= 2 && b[0] == b'-' && is_space(b[1])
    }

    /// Whether a right delimiter starts here, and whether with a trim
    /// marker (" -}}"). Looks at bytes: both forms are ASCII.
    fn at_right_delim(&self) -> (bool, bool) {
        let b = &self.input.as_bytes()[self.pos..];
        match b.first() {
            Some(b'}') => (b.get(1) == Some(&b'}'), false),
            Some(&c) if is_space(c) => {
                let trim = b.get(1..4) == Some(b"-}}");
                (trim, trim)
            }
            _ => (false, false),
        }
    }

    fn lex_text(&mut self) -> State {
        if let Some(x) = find_left_delim(self.rest()) {
            if x > 0 {
                self.skip(x);
                // Trim trailing space of the text if the action starts with "{{- ".
                let mut trim = 0;
                if Self::has_left_trim(&self.input[self.pos + LEFT.len()..]) {
                    let text = &self.input[self.start..self.pos];
                    trim = text.len() - text.trim_end_matches([' ', '\t', '\r', '\n']).len();
                }
                let end = self.pos;
                self.pos -= trim;
                if self.pos > self.start {
                    let line = self.start_line;
                    self.items.push(Item {
                        typ: ItemType::Text,
                        pos: self.start,
                        val: &self.input[self.start..self.pos],
                        line,
                    });
                }
                self.pos = end;
                self.start = self.pos;
                self.start_line = self.line;
            }
            return State::LeftDelim;
        }
        self.skip(self.rest().len());
        if self.pos > self.start {
            self.emit(ItemType::Text);
        }
        self.items.push(Item {
            typ: ItemType::Eof,
            pos: self.pos,
            val: "",
            line: self.line,
        });
        State::Done
    }

    fn lex_left_delim(&mut self) -> State {
        self.pos += LEFT.len();
        let trim = Self::has_left_trim(self.rest());
        let after = if trim { 2 } else { 0 };
        if self.input[self.pos + after..].starts_with(LEFT_COMMENT) {
            self.skip(after);
            self.ignore();
            return State::Comment;
        }
        self.emit(ItemType::LeftDelim);
        self.skip(after);
        self.ignore();
        self.paren_depth = 0;
        State::Inside
    }

    fn lex_comment(&mut self) -> State {
        self.pos += LEFT_COMMENT.len();
        let Some(x) = memchr::memmem::find(self.rest().as_bytes(), RIGHT_COMMENT.as_bytes()) else {
            return self.error("unclosed comment".into());
        };
        self.skip(x + RIGHT_COMMENT.len());
        let (delim, trim) = self.at_right_delim();
        if !delim {
            return self.error("comment ends before closing delimiter".into());
        }
        self.emit(ItemType::Comment);
        if trim {
            self.skip(2);
        }
        self.skip(RIGHT.len());
        if trim {
            let n = self.rest().len()
                - self
                    .rest()
                    .trim_start_matches([' ', '\t', '\r', '\n'])
                    .len();
            self.skip(n);
        }
        self.ignore();
        State::Text
    }

    fn lex_right_delim(&mut self, trim: bool) -> State {
        if trim {
            self.skip(2);
            self.ignore();
        }
        self.pos += RIGHT.len();
        self.emit(ItemType::RightDelim);
        if trim {
            let n = self.rest().len()
                - self
                    .rest()
                    .trim_start_matches([' ', '\t', '\r', '\n'])
                    .len();
            self.skip(n);
            self.ignore();
        }
        State::Text
    }

    fn at_right_delim_inside(&mut self, trim: bool) -> State {
        if self.paren_depth == 0 {
            return State::RightDelim(trim);
        }
        self.error("unclosed left paren".into())
    }

    fn lex_inside(&mut self) -> State {
        // The right delimiter (plain or with its trim marker) and spaces
        // are told apart on bytes, before any character is decoded.
        let bytes = self.input.as_bytes();
        let Some(&b) = bytes.get(self.pos) else {
            return self.error("unclosed action".into());
        };
        if is_space(b) {
            if bytes.get(self.pos + 1..self.pos + 4) == Some(b"-}}") {
                return self.at_right_delim_inside(true);
            }
            return self.lex_space();
        }
        if b == b'}' && bytes.get(self.pos + 1) == Some(&b'}') {
            return self.at_right_delim_inside(false);
        }
        let r = if b < 0x80 {
            self.pos += 1;
            b as char
        } else {
            match self.next() {
                Some(c) => c,
                None => return self.error("unclosed action".into()),
            }
        };
        match r {
            '=' => self.emit(ItemType::Assign),
            ':' => {
                if self.next() != Some('=') {
                    return self.error("expected :=".into());
                }
                self.emit(ItemType::Declare);
            }
            '|' => self.emit(ItemType::Pipe),
            '"' => return self.lex_quote(),
            '`' => return self.lex_raw_quote(),
            '$' => return self.lex_field_or_variable(ItemType::Variable),
            '\'' => return self.lex_char(),
            '.' => match self.peek() {
                Some(c) if c.is_ascii_digit() => {
                    self.backup(Some('.'));
                    return self.lex_number();
                }
                _ => return self.lex_field_or_variable(ItemType::Field),
            },
            '+' | '-' | '0'..='9' => {
                self.backup(Some(r));
                return self.lex_number();
            }
            c if is_alnum(c) => {
                self.backup(Some(c));
                return self.lex_identifier();
            }
            '(' => {
                self.emit(ItemType::LeftParen);
                self.paren_depth += 1;
            }
            ')' => {
                // Checked before emitting, so a stray paren is a lex error.
                self.paren_depth -= 1;
                if self.paren_depth < 0 {
                    return self.error("unexpected right paren".into());
                }
                self.emit(ItemType::RightParen);
            }
            c if c.is_ascii() && !c.is_ascii_control() => self.emit(ItemType::Char),
            c => {
                return self.error(format!(
                    "unrecognized character in action: U+{:04X}{}",
                    c as u32,
                    if c.is_control() {
                        String::new()
                    } else {
                        format!(" '{c}'")
                    }
                ))
            }
        }
        State::Inside
    }

    /// A run of spaces (at least one: the caller saw it), on bytes.
    fn lex_space(&mut self) -> State {
        let bytes = self.input.as_bytes();
        let start = self.pos;
        let mut newlines = 0;
        while let Some(&c) = bytes.get(self.pos) {
            if !is_space(c) {
                break;
            }
            newlines += usize::from(c == b'\n');
            self.pos += 1;
        }
        self.line += newlines;
        // A space followed by "-}}" belongs to the trim marker.
        if bytes.get(self.pos..self.pos + 3) == Some(b"-}}") {
            self.pos -= 1;
            if bytes[self.pos] == b'\n' {
                self.line -= 1;
            }
            if self.pos == start {
                return State::Inside;
            }
        }
        self.emit(ItemType::Space);
        State::Inside
    }

    fn at_terminator(&self) -> bool {
        let bytes = self.input.as_bytes();
        match bytes.get(self.pos) {
            None => true,
            Some(b' ' | b'\t' | b'\r' | b'\n' | b'.' | b',' | b'|' | b':' | b')' | b'(') => true,
            Some(b'}') => bytes.get(self.pos + 1) == Some(&b'}'),
            _ => false,
        }
    }

    fn bad_char(&mut self, c: Option<char>) -> State {
        let c = c.unwrap_or('\u{0}');
        self.error(format!("bad character U+{:04X} '{}'", c as u32, c))
    }

    /// Skips a run of letters, digits and `_`: ASCII ones byte by byte,
    /// decoding only where a byte is not ASCII (names nearly never have
    /// such). Newlines are no letters, so the line stays.
    fn skip_alnum(&mut self) {
        let bytes = self.input.as_bytes();
        loop {
            self.pos += bytes[self.pos..]
                .iter()
                .position(|&b| !ASCII_WORD[usize::from(b)])
                .unwrap_or(bytes.len() - self.pos);
            match bytes.get(self.pos) {
                Some(&b) if b >= 0x80 => match self.rest().chars().next() {
                    Some(c) if is_alnum(c) => self.pos += c.len_utf8(),
                    _ => return,
                },
                _ => return,
            }
        }
    }

    fn lex_identifier(&mut self) -> State {
        self.skip_alnum();
        let word = &self.input[self.start..self.pos];
        if !self.at_terminator() {
            let c = self.peek();
            return self.bad_char(c);
        }
        let typ = match keyword(word) {
            Some(k) if k != ItemType::Dot => k,
            _ if word == "true" || word == "false" => ItemType::Bool,
            _ => ItemType::Identifier,
        };
        self.emit(typ);
        State::Inside
    }

    fn lex_field_or_variable(&mut self, typ: ItemType) -> State {
        if self.at_terminator() {
            self.emit(if typ == ItemType::Variable {
                ItemType::Variable
            } else {
                ItemType::Dot
            });
            return State::Inside;
        }
        self.skip_alnum();
        if !self.at_terminator() {
            let c = self.peek();
            return self.bad_char(c);
        }
        self.emit(typ);
        State::Inside
    }

    fn lex_char(&mut self) -> State {
        loop {
            match self.next() {
                Some('\\') => match self.next() {
                    None | Some('\n') => {
                        return self.error("unterminated character constant".into())
                    }
                    _ => {}
                },
                None | Some('\n') => return self.error("unterminated character constant".into()),
                Some('\'') => break,
                _ => {}
            }
        }
        self.emit(ItemType::CharConstant);
        State::Inside
    }

    fn lex_quote(&mut self) -> State {
        // Jumps from one byte that matters (escape, quote, newline) to the
        // next; everything between is the literal's.
        let bytes = self.input.as_bytes();
        loop {
            let Some(i) = memchr::memchr3(b'\\', b'"', b'\n', &bytes[self.pos..]) else {
                self.pos = bytes.len();
                return self.error("unterminated quoted string".into());
            };
            let at = self.pos + i;
            self.pos = at + 1;
            match bytes[at] {
                b'"' => break,
                b'\n' => {
                    self.line += 1;
                    return self.error("unterminated quoted string".into());
                }
                _ => match self.next() {
                    None | Some('\n') => return self.error("unterminated quoted string".into()),
                    _ => {}
                },
            }
        }
        self.emit(ItemType::String);
        State::Inside
    }

    fn lex_raw_quote(&mut self) -> State {
        match self.rest().find('`') {
            None => self.error("unterminated raw quoted string".into()),
            Some(x) => {
                self.skip(x + 1);
                self.emit(ItemType::RawString);
                State::Inside
            }
        }
    }

    fn lex_number(&mut self) -> State {
        if !self.scan_number() {
            let text = self.input[self.start..self.pos].to_string();
            return self.error(format!("bad number syntax: {:?}", text));
        }
        if let Some(sign @ ('+' | '-')) = self.peek() {
            let _ = sign;
            // Complex: 1+2i. No spaces, must end in 'i'.
            if !self.scan_number() || !self.input[..self.pos].ends_with('i') {
                let text = self.input[self.start..self.pos].to_string();
                return self.error(format!("bad number syntax: {:?}", text));
            }
            self.emit(ItemType::Complex);
        } else {
            self.emit(ItemType::Number);
        }
        State::Inside
    }

    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 11 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 23 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        if let Some(c) = self.peek() {
            if is_alnum(c) {
                self.next();
                return false;
            }
        }
        true
    }
}

/// Where the next `{{` starts: a vectorised search, as most of a chart's
/// template text is text between actions.
fn find_left_delim(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut from = 0;
    while let Some(i) = memchr::memchr(b'{', &b[from..]) {
        let at = from + i;
        if b.get(at + 1) == Some(&b'{') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn types(s: &str) -> Vec<ItemType> {
        lex(s).items.into_iter().map(|i| i.typ).collect()
    }

    #[test]
    fn trims_and_fields() {
        let items = lex("a  {{- .x.y -}}  b").items;
        assert_eq!(items[0].val, "a");
        assert_eq!(items[2].val, ".x");
        assert_eq!(items[3].val, ".y");
        assert_eq!(items[5].val, "b");
    }

    #[test]
    fn numbers_and_keywords() {
        assert_eq!(
            types("{{if 0x1F}}"),
            vec![
                ItemType::LeftDelim,
                ItemType::If,
                ItemType::Space,
                ItemType::Number,
                ItemType::RightDelim,
                ItemType::Eof
            ]
        );
        assert_eq!(types("{{1+2i}}")[1], ItemType::Complex);
    }

    #[test]
    fn comment_with_trim() {
        let items = lex("a \n{{- /* c */ -}}\n b").items;
        let text: Vec<_> = items
            .iter()
            .filter(|i| i.typ == ItemType::Text)
            .map(|i| i.val)
            .collect();
        assert_eq!(text, vec!["a", "b"]);
    }

    #[test]
    fn unterminated() {
        let lexed = lex("{{\"abc}}");
        assert_eq!(lexed.items.last().map(|i| i.typ), Some(ItemType::Error));
        assert_eq!(lexed.error, "unterminated quoted string");
    }

    #[test]
    fn single_braces_are_text() {
        let items = lex("a { b }{ {{.x}} c{").items;
        assert_eq!(items[0].val, "a { b }{ ");
        assert_eq!(items[2].val, ".x");
        assert_eq!(items[4].val, " c{");
        assert_eq!(items[5].typ, ItemType::Eof);
    }

    #[test]
    fn items_by_index_end_with_eof_or_error() {
        let mut l = Lexer::new("x{{.a}}");
        let typs: Vec<_> = (0..7).map(|i| l.item(i).map(|it| it.typ)).collect();
        assert_eq!(
            typs,
            vec![
                Some(ItemType::Text),
                Some(ItemType::LeftDelim),
                Some(ItemType::Field),
                Some(ItemType::RightDelim),
                Some(ItemType::Eof),
                None,
                None
            ]
        );
        assert_eq!(l.end_item().typ, ItemType::Eof);
        let mut l = Lexer::new("a\n{{ 1 )}}");
        assert!(l.item(7).is_none());
        let last = l.end_item();
        assert_eq!((last.typ, last.line, last.pos), (ItemType::Error, 2, 7));
        assert_eq!(l.error_message(), "unexpected right paren");
    }

    #[test]
    fn forgotten_items_are_let_go_and_later_ones_kept() {
        let mut l = Lexer::new("{{.a}}{{.b}}{{.c}}");
        let all: Vec<_> = (0..10).map_while(|i| l.item(i)).map(|it| it.val).collect();
        l.forget_before(4);
        assert_eq!(l.base(), 4);
        assert_eq!(l.item(4).map(|it| it.val), Some(all[4]));
        assert_eq!(l.item(9).map(|it| it.typ), Some(ItemType::Eof));
    }

    #[test]
    fn identifiers_and_fields_with_non_ascii_letters() {
        let items = lex("{{ .héllo.wörld $ünï fünc }}").items;
        let vals: Vec<_> = items.iter().map(|i| (i.typ, i.val)).collect();
        assert_eq!(vals[2], (ItemType::Field, ".héllo"));
        assert_eq!(vals[3], (ItemType::Field, ".wörld"));
        assert_eq!(vals[5], (ItemType::Variable, "$ünï"));
        assert_eq!(vals[7], (ItemType::Identifier, "fünc"));
        let lexed = lex("{{ .ab\u{00a0} }}");
        assert_eq!(lexed.error, "bad character U+00A0 '\u{a0}'");
    }
}
