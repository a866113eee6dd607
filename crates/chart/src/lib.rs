//! Helm charts: loading, values, dependencies, schema validation, and
//! rendering exactly as Helm renders (Helm's `pkg/chart`, `pkg/chartutil`
//! and `pkg/engine`). Template functions come from [`sprig`] plus Helm's own
//! ([`funcs`]); YAML and JSON are [`gocodec`]'s.
//!
//! Start here: [`loader::load`] a chart, then [`render::render_chart`] it
//! with values (or [`engine::render_string`] for one template text).

pub mod chartfile;
pub mod dependencies;
pub mod engine;
pub mod funcs;
pub mod loader;
pub mod manifest;
pub mod objects;
pub mod render;
pub mod schema;
pub mod values;
