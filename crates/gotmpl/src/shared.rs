//! Template sets on several threads: the trees one set parsed, shared with
//! sets on other threads ([`SharedTemplates`]), and the table through
//! which a set turns the string literals of trees into values of its own
//! thread ([`Literals`]).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use foldhash::HashMap;

use crate::options::Options;
use crate::parse::Tree;
use crate::value::Value;

/// Every template of a set, by name, with the set's name and options, as
/// [`Templates::share`](crate::Templates::share) takes them: `Send + Sync`,
/// for [`Templates::from_shared`](crate::Templates::from_shared) to run
/// them on another thread, at the same time as the set that parsed them.
pub struct SharedTemplates {
    pub(crate) trees: Vec<(String, Arc<Tree>)>,
    pub(crate) root_name: String,
    pub(crate) options: Options,
}

/// The string literals of trees as values of the executing thread, each
/// made once per set (shared with its layers): a tree's strings are
/// `Arc<str>`, as any thread may run the tree, while values are `Rc<str>`.
#[derive(Clone, Default)]
pub(crate) struct Literals(Rc<RefCell<HashMap<usize, Literal>>>);

/// A literal of a tree, kept so that its address (the table's key) is not
/// reused while the table remembers it, and its value.
struct Literal {
    _text: Arc<str>,
    value: Rc<str>,
}

impl Literals {
    /// `text` (a string literal of a tree) as a value.
    pub(crate) fn value(&self, text: &Arc<str>) -> Value {
        let key = Arc::as_ptr(text).cast::<u8>() as usize;
        let mut table = self.0.borrow_mut();
        let literal = table.entry(key).or_insert_with(|| Literal {
            _text: text.clone(),
            value: Rc::from(&**text),
        });
        Value::String(literal.value.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn shared_templates_cross_threads() {
        assert_send_sync::<SharedTemplates>();
        assert_send_sync::<crate::ParseCache>();
    }

    #[test]
    fn a_literal_is_made_once_and_never_confused_with_another() {
        let literals = Literals::default();
        let a: Arc<str> = Arc::from("a");
        let (Value::String(one), Value::String(two)) = (literals.value(&a), literals.value(&a))
        else {
            panic!("not strings");
        };
        assert!(Rc::ptr_eq(&one, &two), "made once");
        // A literal dropped by its tree stays in the table, so a new one
        // cannot take its address.
        drop(a);
        for _ in 0..100 {
            let b: Arc<str> = Arc::from("b");
            assert_eq!(literals.value(&b).as_str(), Some("b"));
        }
    }
}
