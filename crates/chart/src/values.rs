//! values (being written).
