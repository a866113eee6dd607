//! Per-thread memo tables for pure, costly steps of loading and rendering a
//! chart (parsing `values.yaml`, compiling `values.schema.json`), keyed by
//! the exact input text. An operator renders the same chart on every
//! reconcile; this lets it pay for those steps once. Each table is bounded
//! by the total size of its keys and starts over when full.

use std::cell::Cell;
use std::collections::HashMap;
use std::hash::BuildHasher;

thread_local! {
    /// Bumped by [`clear_all`]; a table filled in an older generation is
    /// treated as empty.
    static GENERATION: Cell<u64> = const { Cell::new(0) };
}

/// Forgets everything remembered on this thread.
pub fn clear_all() {
    GENERATION.with(|g| g.set(g.get() + 1));
}

fn generation() -> u64 {
    GENERATION.with(|g| g.get())
}

/// A bounded map from input text to a computed value.
pub struct Memo<V> {
    entries: HashMap<u64, (Box<[u8]>, V)>,
    bytes: usize,
    limit: usize,
    generation: u64,
}

impl<V: Clone> Memo<V> {
    pub fn new(limit_bytes: usize) -> Self {
        Memo {
            entries: HashMap::new(),
            bytes: 0,
            limit: limit_bytes,
            generation: generation(),
        }
    }

    fn hash(input: &[u8]) -> u64 {
        // Fast rather than DoS-resistant: a hit is confirmed on the input.
        foldhash::quality::FixedState::default().hash_one(input)
    }

    /// The value remembered for exactly `input`.
    pub fn get(&self, input: &[u8]) -> Option<V> {
        if self.generation != generation() {
            return None;
        }
        match self.entries.get(&Self::hash(input)) {
            Some((k, v)) if &**k == input => Some(v.clone()),
            _ => None,
        }
    }

    /// Remembers `value` for `input` (inputs larger than the bound are not kept).
    pub fn put(&mut self, input: &[u8], value: V) {
        if input.len() > self.limit {
            return;
        }
        if self.generation != generation() || self.bytes + input.len() > self.limit {
            self.generation = generation();
            self.entries.clear();
            self.bytes = 0;
        }
        let old = self
            .entries
            .insert(Self::hash(input), (input.into(), value));
        self.bytes += input.len();
        if let Some((k, _)) = old {
            self.bytes -= k.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_exact_inputs_and_stays_bounded() {
        let mut m: Memo<u32> = Memo::new(8);
        m.put(b"abcd", 1);
        assert_eq!(m.get(b"abcd"), Some(1));
        assert_eq!(m.get(b"abce"), None);
        m.put(b"efgh", 2);
        assert_eq!(m.get(b"abcd"), Some(1));
        // Over the bound: the table starts over.
        m.put(b"ijkl", 3);
        assert_eq!(m.get(b"abcd"), None);
        assert_eq!(m.get(b"ijkl"), Some(3));
        // Too large to keep at all.
        m.put(b"0123456789", 4);
        assert_eq!(m.get(b"0123456789"), None);
        assert_eq!(m.get(b"ijkl"), Some(3));
    }

    #[test]
    fn clear_all_forgets() {
        let mut m: Memo<u32> = Memo::new(8);
        m.put(b"abcd", 1);
        clear_all();
        assert_eq!(m.get(b"abcd"), None);
        m.put(b"efgh", 2);
        assert_eq!(m.get(b"efgh"), Some(2));
    }

    #[test]
    fn replacing_an_entry_keeps_the_size_right() {
        let mut m: Memo<u32> = Memo::new(8);
        m.put(b"abcd", 1);
        m.put(b"abcd", 2);
        m.put(b"efgh", 3);
        assert_eq!(m.get(b"abcd"), Some(2));
        assert_eq!(m.get(b"efgh"), Some(3));
    }
}
