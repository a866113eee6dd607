//! What a function called from a template sees of the running execution
//! besides its arguments: the template set, the nesting depth and the dot.

use std::rc::Rc;

use crate::error::Error;
use crate::exec::Templates;
use crate::value::Value;

/// What a function sees of the running template besides its arguments.
pub struct CallCtx<'a> {
    pub(crate) tmpl: Option<&'a Rc<Templates>>,
    pub(crate) depth: usize,
    pub(crate) dot: Value,
}

impl CallCtx<'static> {
    /// A context with no template set behind it, for calling functions
    /// directly (unit tests, host code).
    pub fn detached() -> CallCtx<'static> {
        CallCtx {
            tmpl: None,
            depth: 0,
            dot: Value::Invalid,
        }
    }
}

impl<'a> CallCtx<'a> {
    /// The template set being executed, if any.
    pub fn templates(&self) -> Option<&'a Rc<Templates>> {
        self.tmpl
    }

    /// Nesting depth of the running execution.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The dot of the calling template.
    pub fn dot(&self) -> &Value {
        &self.dot
    }

    /// Executes a named template of the running set into a string.
    pub fn execute_template(&self, name: &str, data: &Value) -> Result<String, Error> {
        let Some(t) = self.tmpl else {
            return Err(Error::Exec(format!("template: no template {name:?}")));
        };
        let mut out = String::new();
        t.execute_into(name, data, &mut out, self.depth + 1)?;
        Ok(out)
    }
}
