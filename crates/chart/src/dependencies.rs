//! dependencies (being written).
