//! Structured logs, as text or JSON, at the level the flags ask for.
