//! Links the `rudder` binary as a position-dependent executable on x86-64
//! Linux, as Go links `helm` there by default. Position-independent, every
//! `rudder` process starts by applying ~74,000 relocations, writing (so
//! copying) each page of 1.8 MB of relocated read-only data: ~1 ms of CPU
//! and 440 page faults before `main`, a tenth of rendering a small chart.
//! Linked at a fixed address, that work is done once, at link time.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if os == "linux" && arch == "x86_64" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
