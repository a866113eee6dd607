//! Go `fmt` semantics (being written).
