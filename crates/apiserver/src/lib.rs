//! rudder apiserver (being written).
