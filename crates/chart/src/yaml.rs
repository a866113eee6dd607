//! yaml (being written).
