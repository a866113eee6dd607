//! Storage: every object as serialized JSON with a small metadata index
//! ([`Stored`]), one cluster-wide resourceVersion, per-resource event logs
//! for watches and a durable backend (memory or redb) ([`Store`]), kept
//! in JSON written and read without deep recursion ([`json`]).

pub(crate) mod json;
mod store;
mod stored;

pub(crate) use store::{
    Backend, Event, EventType, Keyed, MemoryBackend, Mutation, RedbBackend, Stock, Store, LOG_CAP,
};
pub(crate) use stored::Stored;
