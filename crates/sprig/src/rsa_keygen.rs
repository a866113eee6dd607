//! RSA key generation for Sprig's `genPrivateKey`, `genCA`,
//! `genSelfSignedCert` and `genSignedCert`, as Go's `rsa.GenerateKey` and
//! AWS-LC's `RSA_generate_key_ex` make keys (FIPS 186-5 appendix A.1.3 /
//! 186-4 B.3.3): each prime candidate is a fresh random odd number of half
//! the modulus size at least 2^(k-1)·√2, with gcd(p−1, e) = 1, that passes
//! AWS-LC's trial division and Miller–Rabin test with the rounds AWS-LC uses
//! for key generation; |p−q| > 2^(k−100) and d > 2^(nlen/2).
//!
//! The difference is time. A key's two primes are found by two searches
//! running at once, the first two primes found becoming p and q. Each
//! candidate is a fresh sample, so which prime a search finds does not
//! depend on how long it searched: the key is distributed as a sequential
//! search's is, found in about half the time on two cores, for the same
//! total work. AWS-LC's own key generation finds p and then q on one
//! thread, and Go's is faster than that on one core.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use aws_lc_sys as ffi;
use rsa::BigUint;

/// Go's and AWS-LC's public exponent.
const E: u32 = 65537;

/// The top 64 bits of ⌊2^(k−1)·√2⌋ for any prime size k ≥ 64: candidates at
/// or below them are retried, so the modulus always has its full size (a
/// candidate with exactly these top bits is retried too, which rejects a
/// negligible share of valid primes, as AWS-LC does for non-FIPS sizes).
const SQRT2_TOP: u64 = 0xb504_f333_f9de_6484;

/// Why no key could be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeygenError {
    #[error("unsupported RSA key size {0} (need a multiple of 128 bits, at least 1024)")]
    Size(usize),
    #[error("the random number generator or bignum library failed")]
    Library,
    #[error("{0}")]
    Key(#[from] rsa::Error),
}

/// Largest prime size (in 32-bit halves) the sieve serves: 4096-bit keys.
const MAX_HALVES: usize = 64;

/// Trial division by the odd primes below 2^13 (AWS-LC's set for these
/// sizes), variable-time: only candidates that fail it are discarded
/// early, and which composites fail early says nothing about the prime
/// that is kept (Go's own sieve is variable-time for the same reason).
/// Each residue is one sum of products, Σ hⱼ·(2^32j mod p) over the
/// candidate's 32-bit halves hⱼ, which fits in 64 bits and vectorizes:
/// several times cheaper than AWS-LC's constant-time division, which was a
/// quarter of key generation.
struct Sieve {
    primes: Vec<u64>,
    /// 2^(32·j) mod p for each prime, `MAX_HALVES` per prime.
    powers: Vec<u64>,
}

impl Sieve {
    fn get() -> &'static Sieve {
        static SIEVE: std::sync::OnceLock<Sieve> = std::sync::OnceLock::new();
        SIEVE.get_or_init(|| {
            let primes: Vec<u64> = (3..8192u64)
                .step_by(2)
                .filter(|&n| {
                    (3..)
                        .step_by(2)
                        .take_while(|d| d * d <= n)
                        .all(|d| n % d != 0)
                })
                .collect();
            let mut powers = Vec::with_capacity(primes.len() * MAX_HALVES);
            for &p in &primes {
                let mut c = 1 % p;
                for _ in 0..MAX_HALVES {
                    powers.push(c);
                    c = (c << 32) % p;
                }
            }
            Sieve { primes, powers }
        })
    }

    /// Whether the big-endian number `be` (a multiple of 4 bytes, at most
    /// `MAX_HALVES` halves) has a prime factor below 2^13.
    fn has_small_factor(&self, be: &[u8]) -> bool {
        let n = be.len() / 4;
        let mut halves = [0u64; MAX_HALVES];
        for (j, h) in halves.iter_mut().take(n).enumerate() {
            let at = be.len() - 4 * (j + 1);
            *h = u64::from(u32::from_be_bytes([
                be[at],
                be[at + 1],
                be[at + 2],
                be[at + 3],
            ]));
        }
        let halves = &halves[..n];
        self.primes.iter().enumerate().any(|(i, &p)| {
            let row = &self.powers[i * MAX_HALVES..i * MAX_HALVES + n];
            // Each term is below 2^45, so 64 of them cannot overflow.
            let sum: u64 = halves.iter().zip(row).map(|(h, c)| h * c).sum();
            sum % p == 0
        })
    }
}

/// An owned AWS-LC bignum context and candidate.
struct Search {
    ctx: *mut ffi::BN_CTX,
    candidate: *mut ffi::BIGNUM,
}

impl Search {
    fn new() -> Result<Search, KeygenError> {
        // SAFETY: plain allocations; checked for null and freed in Drop.
        let (ctx, candidate) = unsafe { (ffi::BN_CTX_new(), ffi::BN_new()) };
        let s = Search { ctx, candidate };
        if ctx.is_null() || candidate.is_null() {
            return Err(KeygenError::Library);
        }
        Ok(s)
    }

    /// Draws candidates until one is a probable prime of `bits` bits (big
    /// endian bytes), or `stop` is set (`None`).
    fn find_prime(
        &mut self,
        bits: usize,
        stop: &AtomicBool,
    ) -> Result<Option<Vec<u8>>, KeygenError> {
        let len = bits / 8;
        let mut bytes = vec![0u8; len];
        // Larger primes than the sieve serves use AWS-LC's trial division.
        let sieve = (len / 4 <= MAX_HALVES).then(Sieve::get);
        while !stop.load(Ordering::Relaxed) {
            // SAFETY: `candidate` and `ctx` are valid for the life of self;
            // `bytes` has exactly `len` bytes for the padded export.
            let prime = unsafe {
                if ffi::BN_rand(
                    self.candidate,
                    bits as i32,
                    ffi::BN_RAND_TOP_ONE,
                    ffi::BN_RAND_BOTTOM_ODD,
                ) != 1
                {
                    return Err(KeygenError::Library);
                }
                if ffi::BN_bn2bin_padded(bytes.as_mut_ptr(), len, self.candidate) != 1 {
                    return Err(KeygenError::Library);
                }
                let top = u64::from_be_bytes(bytes[..8].try_into().unwrap_or_default());
                // e is prime, so gcd(p−1, e) = 1 unless p ≡ 1 (mod e).
                if top <= SQRT2_TOP || sieve.is_some_and(|s| s.has_small_factor(&bytes)) {
                    continue;
                }
                if ffi::BN_mod_word(self.candidate, E.into()) == 1 {
                    continue;
                }
                let mut is_prime = 0;
                if ffi::BN_primality_test(
                    &mut is_prime,
                    self.candidate,
                    ffi::BN_prime_checks_for_generation,
                    self.ctx,
                    i32::from(sieve.is_none()),
                    std::ptr::null_mut(),
                ) != 1
                {
                    return Err(KeygenError::Library);
                }
                is_prime == 1
            };
            if prime {
                return Ok(Some(bytes));
            }
        }
        Ok(None)
    }
}

impl Drop for Search {
    fn drop(&mut self) {
        // SAFETY: both were allocated by AWS-LC in `new` (null is accepted).
        unsafe {
            ffi::BN_clear_free(self.candidate);
            ffi::BN_CTX_free(self.ctx);
        }
    }
}

/// `want` distinct probable primes of `bits` bits, searched for by up to
/// `workers` threads at once; the first ones found are returned.
fn primes(bits: usize, want: usize, workers: usize) -> Result<Vec<Vec<u8>>, KeygenError> {
    let found: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::with_capacity(want));
    let stop = AtomicBool::new(false);
    let search = || -> Result<(), KeygenError> {
        let mut s = Search::new()?;
        while let Some(p) = s.find_prime(bits, &stop)? {
            let mut f = found.lock().unwrap_or_else(|e| e.into_inner());
            if f.len() < want && !f.contains(&p) {
                f.push(p);
            }
            if f.len() >= want {
                stop.store(true, Ordering::Relaxed);
            }
        }
        Ok(())
    };
    let result = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..workers).map(|_| scope.spawn(search)).collect();
        let mine = search();
        // Any failure stops every search.
        stop.store(true, Ordering::Relaxed);
        helpers
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(KeygenError::Library)))
            .fold(mine, |acc, r| acc.and(r))
    });
    result?;
    Ok(found.into_inner().unwrap_or_else(|e| e.into_inner()))
}

/// How many threads search for one key's primes.
fn workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(2))
}

/// A fresh RSA key of `bits` bits (a multiple of 128, at least 1024).
pub(crate) fn generate(bits: usize) -> Result<rsa::RsaPrivateKey, KeygenError> {
    if bits < 1024 || bits % 128 != 0 {
        return Err(KeygenError::Size(bits));
    }
    let half = bits / 2;
    let workers = workers();
    loop {
        let mut ps = primes(half, 2, workers)?;
        let (a, b) = (ps.pop(), ps.pop());
        let (Some(a), Some(b)) = (a, b) else {
            return Err(KeygenError::Library);
        };
        let (a, b) = (BigUint::from_bytes_be(&a), BigUint::from_bytes_be(&b));
        let (p, q) = if a > b { (a, b) } else { (b, a) };
        // |p − q| > 2^(k−100), or the modulus is easier to factor.
        if (&p - &q).bits() <= half - 100 {
            continue;
        }
        let key = rsa::RsaPrivateKey::from_p_q(p, q, BigUint::from(E))?;
        // d > 2^(nlen/2) (FIPS 186-5 A.1.1).
        if rsa::traits::PrivateKeyParts::d(&key).bits() <= half {
            continue;
        }
        return Ok(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsa::traits::{PrivateKeyParts, PublicKeyParts};

    #[test]
    fn keys_have_full_size_two_primes_and_consistent_parts() {
        for bits in [1024, 2048] {
            let k = generate(bits).expect("key");
            assert_eq!(k.n().bits(), bits);
            assert_eq!(k.e(), &BigUint::from(E));
            let ps = k.primes();
            assert_eq!(ps.len(), 2);
            assert!(ps[0] > ps[1]);
            assert_eq!(ps[0].bits(), bits / 2);
            assert_eq!(&ps[0] * &ps[1], *k.n());
            k.validate().expect("valid key");
        }
    }

    #[test]
    fn sieve_finds_exactly_the_small_factors() {
        let sieve = Sieve::get();
        assert_eq!(sieve.primes.len(), 1027);
        assert_eq!(sieve.primes.last(), Some(&8191));
        let be = |n: &BigUint| {
            let b = n.to_bytes_be();
            let mut out = vec![0u8; 128 - b.len()];
            out.extend(b);
            out
        };
        // A prime has none...
        let found = primes(1024, 1, 1).expect("prime");
        assert!(!sieve.has_small_factor(&found[0]));
        // ...multiples of the sieving primes have one...
        let base = (BigUint::from(1u8) << 1000usize) + BigUint::from(1u8);
        for f in [3u32, 5, 4099, 8191] {
            assert!(sieve.has_small_factor(&be(&(&base * f))), "multiple of {f}");
        }
        // ...and 2^1000 times the first prime past the sieve has none.
        let past = BigUint::from(8209u32) << 1000usize;
        assert!(!sieve.has_small_factor(&be(&past)));
    }

    #[test]
    fn sizes_outside_the_rule_are_refused() {
        assert!(matches!(generate(1000), Err(KeygenError::Size(1000))));
        assert!(matches!(generate(512), Err(KeygenError::Size(512))));
    }

    #[test]
    fn parallel_searches_return_distinct_primes() {
        let ps = primes(512, 3, 2).expect("primes");
        assert_eq!(ps.len(), 3);
        assert!(ps[0] != ps[1] && ps[1] != ps[2] && ps[0] != ps[2]);
        for p in &ps {
            assert!(p[0] & 0x80 != 0 && p[63] & 1 == 1);
        }
    }
}
