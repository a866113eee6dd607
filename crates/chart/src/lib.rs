//! rudder chart (being written).
