//! A cache of parsed template texts shared by the template sets of one
//! thread. Its trees are `Send + Sync`, so a cache filled on one thread
//! can be handed to another and merged there ([`ParseCache::merge`]).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

// Looked up on every parse: a fast hasher.
use foldhash::HashMap;

use crate::error::Error;
use crate::parse::{self, Tree};

/// Parsed trees by template text, so a host that parses the same
/// templates again (Helm re-parses every chart on every render, and every
/// copy of a library subchart such as Bitnami's `common` in one render)
/// does it once. Parsing depends only on the name, the text and which
/// function names exist, and the name only for locations unless the text
/// defines a template of that name: a cache must only be shared by sets
/// whose functions have the same names. Bounded by the total size of the
/// cached texts; when full it starts over.
pub struct ParseCache {
    entries: HashMap<u64, Cached>,
    bytes: usize,
    limit: usize,
}

/// One cached parse, as [`parse::parse`] returned it for its first name.
struct Cached {
    trees: Arc<[Arc<Tree>]>,
    defines_own_name: bool,
}

impl ParseCache {
    /// A cache holding parses of up to `limit_bytes` of template text.
    pub fn new(limit_bytes: usize) -> Self {
        ParseCache {
            entries: HashMap::default(),
            bytes: 0,
            limit: limit_bytes,
        }
    }

    /// The key a text is cached under: texts with different keys are
    /// different, texts with the same key most likely the same. A host
    /// that fills caches elsewhere ([`ParseCache::merge`]) can skip a text
    /// whose key it has met already: the parse of a text serves every
    /// name it is parsed under.
    pub fn key(text: &str) -> u64 {
        use std::hash::BuildHasher;
        // Fast rather than DoS-resistant: a hit is confirmed on the text.
        foldhash::quality::FixedState::default().hash_one(text)
    }

    /// The trees of `text` parsed as `name`, if a parse of it under this
    /// or another name gives them.
    fn get(&self, key: u64, name: &str, text: &str) -> Option<Arc<[Arc<Tree>]>> {
        let c = self.entries.get(&key)?;
        let first = c.trees.first()?;
        // A hash match is not proof: every tree keeps the whole text.
        if *first.text != *text {
            return None;
        }
        if *first.parse_name == *name {
            return Some(c.trees.clone());
        }
        // Under another name the trees are the same but for the names,
        // unless the text defines either name.
        if c.defines_own_name || c.trees[1..].iter().any(|t| t.name == name) {
            return None;
        }
        let file: Arc<str> = Arc::from(name);
        Some(
            c.trees
                .iter()
                .enumerate()
                .map(|(i, t)| Arc::new(t.renamed(&file, i == 0)))
                .collect(),
        )
    }

    fn put(&mut self, key: u64, text_len: usize, cached: Cached) {
        if self.bytes + text_len > self.limit {
            self.entries.clear();
            self.bytes = 0;
        }
        if text_len <= self.limit {
            self.bytes += text_len;
            self.entries.insert(key, cached);
        }
    }

    /// Parses `text` as template `name` into the cache (unless it holds
    /// that parse already), as [`Templates::parse`](crate::Templates::parse)
    /// would in a set whose functions are those `has_func` names, but
    /// without a set. An error is returned, not kept.
    pub fn parse(
        &mut self,
        name: &str,
        text: &str,
        has_func: &dyn Fn(&str) -> bool,
    ) -> Result<(), Error> {
        let key = ParseCache::key(text);
        if self.get(key, name, text).is_none() {
            self.put_parse(key, name, text, has_func)?;
        }
        Ok(())
    }

    /// Keeps every parse `other` holds (a cache filled on another thread,
    /// say, for a set of functions with the same names as this one's).
    pub fn merge(&mut self, other: ParseCache) {
        for (key, cached) in other.entries {
            let text_len = cached.trees.first().map_or(0, |t| t.text.len());
            self.put(key, text_len, cached);
        }
    }

    /// Parses `text` as `name` and keeps the parse; returns its trees.
    fn put_parse(
        &mut self,
        key: u64,
        name: &str,
        text: &str,
        has_func: &dyn Fn(&str) -> bool,
    ) -> Result<Arc<[Arc<Tree>]>, Error> {
        let parsed = parse_deep(name, text, has_func)?;
        let trees: Arc<[Arc<Tree>]> = parsed.trees.into_iter().map(Arc::new).collect();
        let cached = Cached {
            trees: trees.clone(),
            defines_own_name: parsed.defines_own_name,
        };
        self.put(key, text.len(), cached);
        Ok(trees)
    }

    /// Number of cached parses.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// [`parse::parse`] on a stack deep enough for any nesting it accepts.
fn parse_deep(
    name: &str,
    text: &str,
    has_func: &dyn Fn(&str) -> bool,
) -> Result<parse::ParseOutput, Error> {
    Ok(stacker::maybe_grow(64 * 1024, 2 * 1024 * 1024, || {
        parse::parse(name, text, has_func)
    })?)
}

/// The trees of `text` parsed as `name`: from `cache` when it holds them,
/// else parsed (and kept there).
pub(crate) fn parse_through(
    cache: Option<&Rc<RefCell<ParseCache>>>,
    name: &str,
    text: &str,
    has_func: &dyn Fn(&str) -> bool,
) -> Result<Arc<[Arc<Tree>]>, Error> {
    let Some(cache) = cache else {
        let parsed = parse_deep(name, text, has_func)?;
        return Ok(parsed.trees.into_iter().map(Arc::new).collect());
    };
    let key = ParseCache::key(text);
    if let Some(trees) = cache.borrow().get(key, name, text) {
        return Ok(trees);
    }
    cache.borrow_mut().put_parse(key, name, text, has_func)
}

#[cfg(test)]
mod parse_cache_tests {
    use super::*;
    use crate::exec::Templates;
    use crate::funcs::FuncMap;
    use crate::value::Value;

    fn set_with(cache: &Rc<RefCell<ParseCache>>) -> Templates {
        let mut set = Templates::new(Rc::new(FuncMap::new()));
        set.set_parse_cache(cache.clone());
        set
    }

    #[test]
    fn same_name_and_text_reuse_the_parse() {
        let cache = Rc::new(RefCell::new(ParseCache::new(1 << 20)));
        let src = r#"{{ define "d" }}D{{ end }}a{{ template "d" }}"#;
        let mut one = set_with(&cache);
        one.parse("t", src).unwrap();
        assert_eq!(cache.borrow().len(), 1);
        let mut two = set_with(&cache);
        two.parse("t", src).unwrap();
        assert_eq!(cache.borrow().len(), 1);
        assert!(std::ptr::eq(
            one.lookup("d").unwrap(),
            two.lookup("d").unwrap()
        ));
        assert_eq!(Rc::new(two).execute("t", &Value::Nil).unwrap(), "aD");
        // Another text is another parse; another name with the same text
        // shares the nodes under its own name.
        let mut three = set_with(&cache);
        three.parse("u", src).unwrap();
        three.parse("t", "b").unwrap();
        assert_eq!(cache.borrow().len(), 2);
        assert_eq!(three.lookup("u").map(|t| &*t.parse_name), Some("u"));
        assert!(Arc::ptr_eq(
            &one.lookup("d").unwrap().root,
            &three.lookup("d").unwrap().root
        ));
        assert_eq!(Rc::new(three).execute("t", &Value::Nil).unwrap(), "b");
    }

    #[test]
    fn a_copy_under_another_name_reports_its_own_locations() {
        let cache = Rc::new(RefCell::new(ParseCache::new(1 << 20)));
        let src = "{{ define \"d\" }}\n{{ index . 5 }}{{ end }}x{{ template \"d\" . }}";
        let mut one = set_with(&cache);
        one.parse("a/_h.tpl", src).unwrap();
        let mut two = set_with(&cache);
        two.parse("b/_h.tpl", src).unwrap();
        assert_eq!(cache.borrow().len(), 1);
        let e = Rc::new(two)
            .execute("b/_h.tpl", &Value::list(vec![]))
            .unwrap_err();
        assert_eq!(
            e.message(),
            "template: b/_h.tpl:2:3: executing \"d\" at <index . 5>: error calling index: \
             index out of range: 5"
        );
    }

    #[test]
    fn a_text_defining_a_name_is_parsed_again_under_that_name() {
        let cache = Rc::new(RefCell::new(ParseCache::new(1 << 20)));
        // As "t" the define replaces the empty body; as "u" the body stays
        // and "t" is one more template.
        let src = r#"{{ define "t" }}D{{ end }}"#;
        let mut one = set_with(&cache);
        one.parse("u", src).unwrap();
        one.parse("t", src).unwrap();
        let one = Rc::new(one);
        assert_eq!(one.execute("t", &Value::Nil).unwrap(), "D");
        assert_eq!(one.execute("u", &Value::Nil).unwrap(), "");
        let mut two = set_with(&cache);
        two.parse("t", src).unwrap();
        let e = two.parse("x", "{{ define \"x\" }}X{{ end }}y");
        assert!(e.is_err(), "two bodies of x");
        let mut three = set_with(&cache);
        three.parse("t", "{{ define \"x\" }}X{{ end }}y").unwrap();
        three
            .parse("x", "{{ define \"x\" }}X{{ end }}y")
            .unwrap_err();
    }

    #[test]
    fn errors_are_not_cached_and_layers_share_the_cache() {
        let cache = Rc::new(RefCell::new(ParseCache::new(1 << 20)));
        let mut set = set_with(&cache);
        assert!(set.parse("bad", "{{ if }}").is_err());
        assert!(cache.borrow().is_empty());
        set.parse("t", "x").unwrap();
        let mut child = Templates::layered(Rc::new(set));
        child.parse("c", "{{ template \"t\" }}y").unwrap();
        assert_eq!(cache.borrow().len(), 2);
        assert_eq!(Rc::new(child).execute("c", &Value::Nil).unwrap(), "xy");
    }

    #[test]
    fn a_full_cache_starts_over() {
        let cache = Rc::new(RefCell::new(ParseCache::new(4)));
        let mut set = set_with(&cache);
        set.parse("a", "abc").unwrap();
        set.parse("b", "def").unwrap();
        assert_eq!(cache.borrow().len(), 1);
        set.parse("c", "too long").unwrap();
        assert_eq!(cache.borrow().len(), 0);
        assert_eq!(Rc::new(set).execute("c", &Value::Nil).unwrap(), "too long");
    }

    #[test]
    fn a_cache_filled_on_another_thread_serves_this_one() {
        let src = r#"{{ define "d" }}D{{ end }}a{{ template "d" }}"#;
        let theirs = std::thread::spawn(move || {
            let mut c = ParseCache::new(1 << 20);
            c.parse("t", src, &|_| false).unwrap();
            c.parse("t", src, &|_| false).unwrap();
            assert!(c.parse("bad", "{{ nosuch }}", &|_| false).is_err());
            c
        })
        .join()
        .unwrap();
        assert_eq!(theirs.len(), 1, "parsed once, errors not kept");
        let cache = Rc::new(RefCell::new(ParseCache::new(1 << 20)));
        cache.borrow_mut().merge(theirs);
        let mut set = set_with(&cache);
        set.parse("t", src).unwrap();
        assert_eq!(cache.borrow().len(), 1, "the merged parse served");
        assert_eq!(Rc::new(set).execute("t", &Value::Nil).unwrap(), "aD");
    }
}
