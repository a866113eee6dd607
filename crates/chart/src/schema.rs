//! schema (being written).
