//! The template error, worded as Go's `text/template` words its parse and
//! execution errors.

use crate::parse;

/// A template error: a parse error or an execution error, worded as Go's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Parse(String),
    #[error("{0}")]
    Exec(String),
}

impl Error {
    pub fn message(&self) -> &str {
        match self {
            Error::Parse(s) | Error::Exec(s) => s,
        }
    }
}

impl From<parse::ParseError> for Error {
    fn from(e: parse::ParseError) -> Self {
        Error::Parse(e.0)
    }
}
