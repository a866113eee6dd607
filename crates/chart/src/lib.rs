//! Helm charts: loading, values, dependencies, schema validation, the Sprig
//! and Helm template functions, and rendering exactly as Helm renders.

pub mod chartfile;
pub mod dependencies;
pub mod depth;
pub mod engine;
pub mod funcs;
pub mod json;
pub mod loader;
pub mod manifest;
mod memo;
pub mod objects;
pub mod oracle;
pub mod render;
pub mod schema;
pub mod toml;
pub mod values;
pub mod yaml;
