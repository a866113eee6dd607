//! Helm charts: loading, values, dependencies, schema validation, and
//! rendering exactly as Helm renders (Helm's `pkg/chart`, `pkg/chartutil`
//! and `pkg/engine`). Template functions come from [`sprig`] plus Helm's own
//! (module `funcs`); YAML and JSON are [`gocodec`]'s.
//!
//! Start here: [`loader::load`] a chart, then [`render::render_chart`] it
//! with values (or [`engine::render_string`] for one template text).
//! [`oneshot`] is `rudder template`'s pipeline: the same render, spread
//! over two cores.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod chartfile;
mod dependencies;
pub mod engine;
mod funcs;
pub mod loader;
pub mod manifest;
mod objects;
pub mod oneshot;
pub mod render;
pub mod schema;
pub mod values;
