//! toml (being written).
