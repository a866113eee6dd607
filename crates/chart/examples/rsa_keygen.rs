//! Times RSA key generation as templates see it (`genCA`, which makes a
//! 2048-bit key, and `genPrivateKey "rsa"`, 4096 bits) against the pure-Rust
//! `rsa` crate's generator that rudder used before.
//!
//! Run: `cargo run --release -p rudder-chart --example rsa_keygen [N]`

use std::time::Instant;

use chart::engine::{Engine, Renderable};
use gotmpl::{Map, MapRef};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn time_template(text: &str, n: usize) -> f64 {
    let tpl = Renderable {
        name: "c/templates/k.yaml".into(),
        text: text.into(),
        vals: MapRef::new(Map::new()),
        base_path: "c/templates".into(),
    };
    let engine = Engine::new();
    let times = (0..n)
        .map(|_| {
            let t = Instant::now();
            let out = engine.render(std::slice::from_ref(&tpl));
            assert!(out.is_ok(), "{out:?}");
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    median(times)
}

fn time_rsa_crate(bits: usize, n: usize) -> f64 {
    let times = (0..n)
        .map(|_| {
            let t = Instant::now();
            let k = rsa::RsaPrivateKey::new(&mut rand::rngs::OsRng, bits);
            assert!(k.is_ok());
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    median(times)
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(9);
    println!("median of {n} runs");
    println!(
        "genCA (RSA 2048 + certificate):   {:8.1} ms",
        time_template(r#"{{ (genCA "ca" 365).Cert | len }}"#, n)
    );
    println!(
        "genPrivateKey \"rsa\" (RSA 4096):   {:8.1} ms",
        time_template(r#"{{ genPrivateKey "rsa" | len }}"#, n)
    );
    println!(
        "rsa crate RsaPrivateKey::new 2048: {:8.1} ms",
        time_rsa_crate(2048, n)
    );
    println!(
        "rsa crate RsaPrivateKey::new 4096: {:8.1} ms",
        time_rsa_crate(4096, n.min(3))
    );
}
