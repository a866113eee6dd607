# Developer tasks for the rudder workspace; `.ci/run` calls `just ci`.
# `just --list` shows every recipe. Tests that need ../shared (oracle, corpus),
# kubectl or the real helm skip with a message where those are missing.

# Incremental state only costs disk on this workspace's test binaries.
export CARGO_INCREMENTAL := "0"

# The MSRV the workspace declares (`rust-version` in Cargo.toml).
msrv := "1.85"

# Lists the recipes.
default:
    @just --list

# Format every crate in place.
fmt:
    cargo fmt --all

# Fail when anything is not formatted (what CI runs).
fmt-check:
    cargo fmt --all -- --check

# Lints for every crate and target, warnings denied.
clippy:
    cargo clippy --workspace --all-targets -- -D warnings

# README's test command: every crate's unit and integration tests (embedded API server).
test:
    cargo test --workspace

# Unit tests only (beside the code; no API server, no tools).
test-unit:
    cargo test --workspace --lib

# Integration and end-to-end suites only (tests/ of every crate), on the embedded API server.
test-e2e:
    cargo test --workspace --test '*'

# Those suites on your cluster instead: `just test-cluster /tmp/kind.kubeconfig`.
test-cluster kubeconfig:
    RUDDER_TEST_KUBECONFIG={{kubeconfig}} cargo test --workspace --test '*'

# Benchmarks (see README's "Measuring" for what each prints and its knobs).
bench *args:
    cargo bench --workspace {{args}}

# Every cargo-fuzz crate keeps compiling (they live outside the workspace).
fuzz-check:
    for fuzz in crates/*/fuzz/Cargo.toml; do CARGO_TARGET_DIR=target/fuzz-check cargo check --locked --manifest-path "$fuzz" --all-targets || exit 1; done

# cargo-fuzz (`cargo install cargo-fuzz`) passes sanitizer flags that
# RUSTC_BOOTSTRAP lets the stable toolchain accept.

# Builds and runs one fuzz target for SECONDS: `just fuzz gocodec yaml 600`.
fuzz crate="gotmpl" target="parse_execute" seconds="60":
    cd crates/{{crate}}/fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run {{target}} -- -max_total_time={{seconds}}

# API docs for every crate; broken or private links and bad HTML fail.
doc:
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

# `cargo check` on the declared rust-version when rustup has it, else on the default toolchain (warns).
msrv:
    #!/usr/bin/env bash
    set -euo pipefail
    if rustup run {{msrv}} rustc --version >/dev/null 2>&1; then
        cargo +{{msrv}} check --workspace --all-targets
    else
        echo "warning: toolchain {{msrv}} (rust-version) is not installed; checking with $(rustc --version) instead (rustup toolchain install {{msrv}} for the real check)" >&2
        cargo check --workspace --all-targets
    fi

# Licenses, banned crates and sources of every dependency (deny.toml); needs
# `cargo install cargo-deny --locked`. Advisories need the network: `cargo deny check advisories`.
deny:
    cargo deny check licenses bans sources

# What CI runs, cheapest first, so a lint failure stops before the long tests.
ci: fmt-check deny clippy doc fuzz-check test
