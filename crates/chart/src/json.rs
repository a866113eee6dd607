//! json (being written).
