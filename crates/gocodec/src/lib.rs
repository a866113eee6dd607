//! YAML, JSON and TOML exactly as Helm's Go libraries read and write them:
//! `sigs.k8s.io/yaml` and go-yaml (YAML 1.1 typing, anchors, Helm's error
//! texts), `encoding/json` (sorted keys, HTML escapes, Go's float text),
//! and BurntSushi's TOML as `toToml`/`fromToml` use it. Templates' values
//! (gotmpl's [`gotmpl::Value`]) and plain JSON values (`serde_json`) both
//! go in and out.
//!
//! Start here: [`yaml::parse_yaml_to_json`] to read a manifest or values
//! file, [`yaml::to_yaml`] / [`yaml::json_to_yaml`] to write one.
//!
//! [`depth`] holds the nesting limits these readers share with Go, and
//! [`memo`] the per-thread tables that remember parses of the same text.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod depth;
pub mod json;
pub mod memo;
pub mod toml;
pub mod yaml;
