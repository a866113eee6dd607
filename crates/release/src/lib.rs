//! rudder release (being written).
