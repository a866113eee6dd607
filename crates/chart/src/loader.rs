//! loader (being written).
