//! RSA key generation for Sprig's `genPrivateKey`, `genCA`,
//! `genSelfSignedCert` and `genSignedCert`, as Go's `rsa.GenerateKey`
//! (crypto/internal/fips140/rsa, Go 1.24 and later) makes keys: each prime
//! is a fresh random odd number of exactly half the modulus size with its
//! top two bits set, with gcd(p−1, e) = 1 for e = 65537, that survives
//! trial division by small primes and then Miller–Rabin with FIPS 186-5's
//! round count for its size (5 rounds for a 1024-bit prime: the table of
//! Go's `isPrime` and AWS-LC's `BN_prime_checks_for_size`), each with a
//! uniformly random base; candidates and bases come from the operating
//! system's generator, as Go's `crypto/rand` reads it; the key is kept
//! when |p−q| > 2^(k−100) and d > 2^(nlen/2).
//!
//! The difference is time. A key's two primes are found by two searches
//! running at once, and primes found ahead of need wait in a small pool
//! (see [`prefetch`]) for the next key. Each candidate is a fresh sample
//! and each pooled prime is used once, so which primes a key gets does not
//! depend on when or by which search they were found: keys are distributed
//! as a sequential search's are, in about half the time on two cores.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use aws_lc_sys as ffi;
use rsa::BigUint;

/// Go's and AWS-LC's public exponent.
const E: u32 = 65537;

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
///
/// Miller–Rabin itself is ours too, on AWS-LC's bignums: AWS-LC's
/// `BN_primality_test` blinds its round count, running 16 rounds of full
/// length on each prime it keeps where FIPS 186-5 asks for 5; that was
/// two fifths of the work of a key. Go's test is variable-time as well.
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

/// Miller–Rabin rounds for a random candidate of `bits` bits: FIPS 186-5's
/// table as Go's `isPrime` and AWS-LC's `BN_prime_checks_for_size` have it.
fn miller_rabin_rounds(bits: usize) -> usize {
    match bits {
        3747.. => 3,
        1345.. => 4,
        476.. => 5,
        400.. => 6,
        347.. => 7,
        308.. => 8,
        55.. => 27,
        _ => 34,
    }
}

/// An AWS-LC bignum context and the numbers one search reuses.
///
/// Randomness comes from the operating system (`getrandom`, as Go's
/// `crypto/rand` reads it), never from AWS-LC's generator: its first use in
/// a process seeds a CPU-jitter entropy pool, ~30 ms of work that every
/// `rudder template` needing a key would wait for.
struct Search {
    ctx: *mut ffi::BN_CTX,
    /// The candidate w, then w − 1, m = (w − 1)/2^a, the base b and z.
    w: *mut ffi::BIGNUM,
    w1: *mut ffi::BIGNUM,
    m: *mut ffi::BIGNUM,
    b: *mut ffi::BIGNUM,
    z: *mut ffi::BIGNUM,
}

impl Search {
    fn new() -> Result<Search, KeygenError> {
        // SAFETY: plain allocations; checked for null and freed in Drop.
        let s = unsafe {
            Search {
                ctx: ffi::BN_CTX_new(),
                w: ffi::BN_new(),
                w1: ffi::BN_new(),
                m: ffi::BN_new(),
                b: ffi::BN_new(),
                z: ffi::BN_new(),
            }
        };
        if [s.w, s.w1, s.m, s.b, s.z].iter().any(|p| p.is_null()) || s.ctx.is_null() {
            return Err(KeygenError::Library);
        }
        Ok(s)
    }

    /// Draws candidates until one is a probable prime of `bits` bits (big
    /// endian bytes), or `stop` says enough (`None`). Each candidate is a
    /// fresh sample (rejection sampling, as Go's `randomPrime`), so that
    /// which composites are discarded early says nothing about the prime
    /// that is kept, and the tests may run in variable time.
    fn find_prime(
        &mut self,
        bits: usize,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Vec<u8>>, KeygenError> {
        use rand::RngCore;
        let len = bits / 8;
        let mut bytes = vec![0u8; len];
        // Larger primes than the sieve serves go straight to Miller–Rabin.
        let sieve = (len / 4 <= MAX_HALVES).then(Sieve::get);
        while !stop() {
            rand::rngs::OsRng
                .try_fill_bytes(&mut bytes)
                .map_err(|_| KeygenError::Library)?;
            // Go's top two bits (p·q has exactly 2k bits) and an odd number.
            bytes[0] |= 0xc0;
            bytes[len - 1] |= 1;
            if sieve.is_some_and(|s| s.has_small_factor(&bytes)) {
                continue;
            }
            // SAFETY: `w` is valid for the life of self; `bytes` is `len` long.
            let w = unsafe { ffi::BN_bin2bn(bytes.as_ptr(), len, self.w) };
            if w.is_null() {
                return Err(KeygenError::Library);
            }
            // e is prime, so gcd(p−1, e) = 1 unless p ≡ 1 (mod e).
            // SAFETY: `w` holds the candidate.
            if unsafe { ffi::BN_mod_word(self.w, E.into()) } == 1 {
                continue;
            }
            if self.is_probable_prime(bits)? {
                return Ok(Some(bytes));
            }
        }
        Ok(None)
    }

    /// Miller–Rabin (FIPS 186-5 B.3.1) on the candidate in `w`, with
    /// [`miller_rabin_rounds`] uniformly random bases in [2, w − 2], drawn
    /// as Go draws them: `bits` random bits, out-of-range values redrawn.
    fn is_probable_prime(&mut self, bits: usize) -> Result<bool, KeygenError> {
        // SAFETY: every pointer is valid for the life of self; `mont` is
        // checked for null and freed below on every path.
        unsafe {
            if ffi::BN_copy(self.w1, self.w).is_null() {
                return Err(KeygenError::Library);
            }
            check(ffi::BN_sub_word(self.w1, 1))?;
            let a = ffi::BN_count_low_zero_bits(self.w1);
            check(ffi::BN_rshift(self.m, self.w1, a))?;
            let mont = ffi::BN_MONT_CTX_new_for_modulus(self.w, self.ctx);
            if mont.is_null() {
                return Err(KeygenError::Library);
            }
            let result = self.miller_rabin(bits, a, mont);
            ffi::BN_MONT_CTX_free(mont);
            result
        }
    }

    /// The rounds of [`Search::is_probable_prime`], once w − 1 = m·2^a is
    /// known and `mont` holds w's Montgomery constants.
    ///
    /// # Safety
    /// `mont` must be AWS-LC's Montgomery context for `self.w`.
    unsafe fn miller_rabin(
        &mut self,
        bits: usize,
        a: std::os::raw::c_int,
        mont: *const ffi::BN_MONT_CTX,
    ) -> Result<bool, KeygenError> {
        use rand::RngCore;
        let len = bits.div_ceil(8);
        let mut base = vec![0u8; len];
        let mut rounds = miller_rabin_rounds(bits);
        while rounds > 0 {
            rand::rngs::OsRng
                .try_fill_bytes(&mut base)
                .map_err(|_| KeygenError::Library)?;
            base[0] &= 0xff >> (len * 8 - bits);
            // SAFETY: the numbers are valid for the life of self, `base` is
            // `len` bytes long and `mont` belongs to `w` (the caller's word).
            unsafe {
                if ffi::BN_bin2bn(base.as_ptr(), len, self.b).is_null() {
                    return Err(KeygenError::Library);
                }
                // Reject b ≤ 1 and b ≥ w − 1.
                if ffi::BN_is_zero(self.b) == 1
                    || ffi::BN_is_one(self.b) == 1
                    || ffi::BN_cmp(self.b, self.w1) >= 0
                {
                    continue;
                }
                check(ffi::BN_mod_exp_mont_consttime(
                    self.z, self.b, self.m, self.w, self.ctx, mont,
                ))?;
                let mut possibly_prime =
                    ffi::BN_is_one(self.z) == 1 || ffi::BN_cmp(self.z, self.w1) == 0;
                for _ in 1..a {
                    if possibly_prime {
                        break;
                    }
                    check(ffi::BN_mod_sqr(self.z, self.z, self.w, self.ctx))?;
                    if ffi::BN_cmp(self.z, self.w1) == 0 {
                        possibly_prime = true;
                    } else if ffi::BN_is_one(self.z) == 1 {
                        // 1 never squares to −1: composite.
                        break;
                    }
                }
                if !possibly_prime {
                    return Ok(false);
                }
            }
            rounds -= 1;
        }
        Ok(true)
    }
}

/// An AWS-LC call's status as a result.
fn check(status: std::os::raw::c_int) -> Result<(), KeygenError> {
    if status == 1 {
        Ok(())
    } else {
        Err(KeygenError::Library)
    }
}

impl Drop for Search {
    fn drop(&mut self) {
        // SAFETY: all were allocated by AWS-LC in `new` (null is accepted).
        unsafe {
            for n in [self.w, self.w1, self.m, self.b, self.z] {
                ffi::BN_clear_free(n);
            }
            ffi::BN_CTX_free(self.ctx);
        }
    }
}

/// Primes found but not yet used, each used by one key only. A search
/// that finds more than its key needs (two searches finishing at once)
/// leaves the extra here, and [`prefetch`] fills it ahead of need.
struct Pool {
    /// (prime size in bits, big-endian prime).
    primes: Vec<(usize, Vec<u8>)>,
    /// (prime size, primes still expected to be asked for) that [`prefetch`]
    /// searches for in the background.
    wanted: Vec<(usize, usize)>,
}

/// Most primes the pool keeps; extras beyond it are dropped.
const POOL_MAX: usize = 8;

static POOL: Mutex<Pool> = Mutex::new(Pool {
    primes: Vec::new(),
    wanted: Vec::new(),
});

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    POOL.lock().unwrap_or_else(|e| e.into_inner())
}

impl Pool {
    fn count(&self, bits: usize) -> usize {
        self.primes.iter().filter(|(b, _)| *b == bits).count()
    }

    /// Keeps a new prime (once: a repeat is dropped).
    fn put(&mut self, bits: usize, p: Vec<u8>) {
        if self.primes.len() < POOL_MAX && !self.primes.iter().any(|(_, q)| *q == p) {
            self.primes.push((bits, p));
        }
    }

    /// Takes `want` primes of `bits` bits out, if there are as many.
    fn take(&mut self, bits: usize, want: usize) -> Option<Vec<Vec<u8>>> {
        if self.count(bits) < want {
            return None;
        }
        let mut out = Vec::with_capacity(want);
        self.primes.retain(|(b, p)| {
            if *b == bits && out.len() < want {
                out.push(p.clone());
                false
            } else {
                true
            }
        });
        if let Some((_, n)) = self.wanted.iter_mut().find(|(b, _)| *b == bits) {
            *n = n.saturating_sub(want);
        }
        Some(out)
    }

    /// Whether the background search should look for another prime.
    fn prefetch_needed(&self, bits: usize) -> bool {
        self.wanted
            .iter()
            .any(|&(b, n)| b == bits && n > self.count(bits))
    }
}

/// `want` distinct probable primes of `bits` bits, from the pool and from
/// searches on up to `workers` threads at once, which stop as soon as the
/// pool holds enough (whoever found them).
fn primes(bits: usize, want: usize, workers: usize) -> Result<Vec<Vec<u8>>, KeygenError> {
    loop {
        if let Some(ps) = pool().take(bits, want) {
            return Ok(ps);
        }
        let failed = Arc::new(AtomicBool::new(false));
        let search = move |failed: &AtomicBool| -> Result<(), KeygenError> {
            let stop = || failed.load(Ordering::Relaxed) || pool().count(bits) >= want;
            let mut s = Search::new()?;
            while let Some(p) = s.find_prime(bits, &stop)? {
                pool().put(bits, p);
            }
            Ok(())
        };
        // Helpers start on another core at once (a thread queued behind
        // this busy one could wait milliseconds, a good part of a key).
        let helpers: Vec<_> = (1..workers)
            .filter_map(|_| {
                let failed = failed.clone();
                let thread = std::thread::Builder::new().name("rsa-search".into());
                gocodec::placement::spawn(thread, move || search(&failed)).ok()
            })
            .collect();
        let mine = search(&failed);
        // Any failure stops every search.
        failed.store(true, Ordering::Relaxed);
        helpers
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(KeygenError::Library)))
            .fold(mine, |acc, r| acc.and(r))?;
        // Another key may have taken them first: then search again.
    }
}

/// Starts looking, on a background thread, for the primes of `keys` RSA
/// keys of `bits` bits that are about to be asked for, so that finding
/// them overlaps with other work (loading and rendering a chart); the keys
/// `generate` then makes take these primes first. For one-shot commands
/// such as `rudder template`: primes nobody asks for are wasted work.
pub fn prefetch(bits: usize, keys: usize) {
    if keys == 0 || bits < 1024 || bits % 128 != 0 {
        return;
    }
    let half = bits / 2;
    {
        let mut p = pool();
        match p.wanted.iter_mut().find(|(b, _)| *b == half) {
            Some((_, n)) => *n += 2 * keys,
            None => p.wanted.push((half, 2 * keys)),
        }
    }
    let spawned = std::thread::Builder::new()
        .name("rsa-prefetch".into())
        .spawn(move || {
            yield_to_other_work();
            let Ok(mut s) = Search::new() else { return };
            let stop = || !pool().prefetch_needed(half);
            while let Ok(Some(p)) = s.find_prime(half, &stop) {
                pool().put(half, p);
            }
        });
    // Without the thread, keys are simply searched for when asked for.
    drop(spawned);
}

/// Lowers the calling thread to the lowest scheduling priority (Linux
/// keeps a nice value per thread): a search ahead of need then runs on a
/// core nothing else wants, and gives way to the render (and to other
/// processes) on a busy machine, as the keys it looks for may never be
/// asked for. Elsewhere, or if refused, the thread keeps its priority.
fn yield_to_other_work() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority only changes the calling thread's nice value
    // (`who` 0 is the caller); its result needs no handling.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
    }
}

/// How many 2048-bit RSA keys a template text may ask for: its calls of
/// `genCA`, `genSelfSignedCert` and `genSignedCert` (each makes one; their
/// `…WithKey` forms make none). An upper bound, as some calls sit in
/// branches that never run: what [`prefetch`] is told to expect.
pub fn keys_in_template(text: &str) -> usize {
    const MAKERS: [&str; 3] = ["CA", "SelfSignedCert", "SignedCert"];
    let bytes = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    // One (vectorised) pass over the text for "gen", then the rest of the
    // name: this runs over every template before rendering starts.
    memchr::memmem::find_iter(bytes, b"gen")
        .filter(|&i| {
            let before = i.checked_sub(1).map(|j| bytes[j]);
            let rest = &bytes[i + 3..];
            !before.is_some_and(word)
                && MAKERS.iter().any(|m| {
                    rest.starts_with(m.as_bytes()) && !rest.get(m.len()).copied().is_some_and(word)
                })
        })
        .count()
}

/// How many threads search for one key's primes.
fn workers() -> usize {
    gocodec::depth::cores().min(2)
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
    fn prefetched_primes_make_the_next_key() {
        // A size no other test uses, so that no other test takes them.
        prefetch(1152, 1);
        let mut waited = 0;
        while pool().count(576) < 2 && waited < 600 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            waited += 1;
        }
        assert_eq!(pool().count(576), 2, "the background search found both");
        let k = generate(1152).expect("key");
        assert_eq!(pool().count(576), 0, "the key used the pooled primes");
        assert!(!pool().prefetch_needed(576), "nothing more is searched for");
        assert_eq!(k.n().bits(), 1152);
        k.validate().expect("valid key");
    }

    #[test]
    fn key_making_calls_are_counted_as_whole_names() {
        let t = r#"{{ $ca := genCA "x" 365 }}{{ genSignedCert "a" nil nil 1 $ca }}
{{ genCAWithKey "x" 1 $k }}{{ genSelfSignedCert "h" nil nil 1 }}{{ mygenCA }}"#;
        assert_eq!(keys_in_template(t), 3);
        assert_eq!(keys_in_template("{{ genPrivateKey \"ecdsa\" }}"), 0);
    }

    /// Runs our Miller–Rabin on `n`.
    fn probable_prime(n: &BigUint) -> bool {
        let mut s = Search::new().expect("search");
        let be = n.to_bytes_be();
        // SAFETY: `s.w` is valid; `be` is its own length.
        assert!(!unsafe { ffi::BN_bin2bn(be.as_ptr(), be.len(), s.w) }.is_null());
        s.is_probable_prime(n.bits()).expect("test")
    }

    #[test]
    fn miller_rabin_tells_primes_from_composites() {
        let one = BigUint::from(1u8);
        let mersenne = |p: usize| (BigUint::from(1u8) << p) - &one;
        // Mersenne primes of 521 and 607 bits (5 rounds each)...
        assert!(probable_prime(&mersenne(521)));
        assert!(probable_prime(&mersenne(607)));
        assert!(probable_prime(&BigUint::from(65537u32)));
        // ...and composites: products of primes, a Carmichael number and
        // strong pseudoprimes to base 2, which fool one fixed base.
        assert!(!probable_prime(&(mersenne(521) * mersenne(89))));
        assert!(!probable_prime(&(mersenne(607) * mersenne(607))));
        for n in [561u32, 2047, 3277, 4033, 1_373_653, 25_326_001] {
            assert!(!probable_prime(&BigUint::from(n)), "{n} is composite");
        }
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
            assert!(p[0] & 0xc0 == 0xc0 && p[63] & 1 == 1);
        }
    }
}
