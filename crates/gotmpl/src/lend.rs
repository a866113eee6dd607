//! Templates lent from the set of one thread to a set on another, so that
//! both execute the same parsed trees at once (see
//! [`Templates::borrowing`](crate::Templates::borrowing)).

use std::cell::RefCell;
use std::ptr::NonNull;
use std::rc::Rc;

use foldhash::HashMap;

use crate::exec::Options;
use crate::parse::Tree;
use crate::value::Value;

/// A template of a set: parsed into it, or lent by a set on another
/// thread ([`LentTrees`]), whose reference counts this thread never
/// touches.
pub(crate) enum Held {
    Own(Rc<Tree>),
    Lent(NonNull<Tree>),
}

impl Held {
    pub(crate) fn tree(&self) -> &Tree {
        match self {
            Held::Own(t) => t,
            // SAFETY: a lent tree outlives every set that borrows it (the
            // contract of `Templates::borrowing`), and only its contents
            // are read here, never the counts around them.
            Held::Lent(t) => unsafe { t.as_ref() },
        }
    }
}

/// Every template of a set, lent to a set on another thread
/// ([`Templates::borrowing`](crate::Templates::borrowing)) so that both
/// can execute them at once without a copy. Trees share their parts
/// through `Rc`, which cannot cross threads: a borrowing set only ever
/// reads the trees, never clones or drops any of their parts (string
/// literals become its own values through a table of its own), so no
/// reference count is touched by two threads.
pub struct LentTrees {
    pub(crate) trees: Vec<(String, NonNull<Tree>)>,
    pub(crate) root_name: String,
    pub(crate) options: Options,
}

// SAFETY: the pointers are only read, through `Templates::borrowing`,
// whose caller promises that the lender's trees outlive the borrower and
// are not changed meanwhile; see `LentTrees`.
unsafe impl Send for LentTrees {}

/// The string literals of lent trees as values of the borrowing thread,
/// each made once: a literal's own `Rc` belongs to the lender's thread.
/// Shared by a borrowing set and its layers.
#[derive(Clone, Default)]
pub(crate) struct Literals(Rc<RefCell<HashMap<usize, Rc<str>>>>);

impl Literals {
    /// `text` (a literal of a tree) as this thread's value.
    pub(crate) fn own(&self, text: &Rc<str>) -> Value {
        // By address, checked against the text: a tree this thread parsed
        // (`tpl`) may be dropped and its memory reused by another.
        let key = text.as_ptr() as usize;
        let mut table = self.0.borrow_mut();
        let own = table.entry(key).or_insert_with(|| Rc::from(&**text));
        if **own != **text {
            *own = Rc::from(&**text);
        }
        Value::String(own.clone())
    }
}
