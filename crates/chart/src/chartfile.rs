//! chartfile (being written).
