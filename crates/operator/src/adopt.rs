//! Adoption: when a release's records are gone but its objects still run, write a fresh
//! record over the live objects instead of installing (and possibly uninstalling) anew.
