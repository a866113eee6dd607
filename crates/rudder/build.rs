//! Links the `rudder` binary as a position-dependent executable on Linux.
//!
//! A position-independent `rudder` starts by applying ~45,000 relocations to
//! 800 KiB of its own data, copying each page it writes: ~170 of a trivial
//! render's ~370 page faults and about 0.3–0.5 ms of every process, a tenth
//! of `rudder template` on a small chart. Linked at a fixed address, the
//! loader has nothing to relocate. Helm and operator-sdk's `helm-operator`,
//! built by Go with its default `-buildmode=exe`, are position-dependent
//! executables too. Only the binary is linked this way; tests, benches and
//! the libraries keep the default.

fn main() {
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let gnu = std::env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|env| env == "gnu");
    if linux && gnu {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
