//! Which replica owns a CR: rendezvous (highest random weight) hashing of the CR's
//! `namespace/name` over the replicas that watch its kind. Every replica computes the
//! same answer from the same member list, with no coordination; when a replica joins
//! or leaves, only the CRs it gains or held move (about 1/N of them).
//!
//! The hash is FNV-1a followed by a SplitMix64 finaliser, fixed here rather than
//! std's `DefaultHasher` (whose algorithm may change between Rust releases), so
//! replicas built by different toolchains during a rolling update agree.

/// The member that owns `key` among `members`: the one with the highest weight for
/// it (ties, which need a 64-bit collision, go to the greater name). `None` when
/// there are no members.
pub fn owner<'a, I>(key: &str, members: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let key_hash = fnv1a(key.as_bytes());
    members
        .into_iter()
        .map(|m| (weight(m, key_hash), m))
        .max()
        .map(|(_, m)| m)
}

/// The key a CR is assigned by.
pub fn cr_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

fn weight(member: &str, key_hash: u64) -> u64 {
    splitmix64(fnv1a(member.as_bytes()) ^ splitmix64(key_hash))
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A stable 64-bit hash of `bytes` (the member list's fingerprint in Leases).
pub(crate) fn fingerprint(bytes: &[u8]) -> u64 {
    splitmix64(fnv1a(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn keys(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| cr_key(&format!("tenant-{}", i % 30), &format!("cr-{i}")))
            .collect()
    }

    fn assign<'a>(keys: &[String], members: &[&'a str]) -> Vec<&'a str> {
        keys.iter()
            .map(|k| owner(k, members.iter().copied()).expect("a member"))
            .collect()
    }

    const THREE: [&str; 3] = [
        "rudder-7d9f_1b4e0c1a-0000-4000-8000-000000000001",
        "rudder-7d9f_5c2d9e3f-0000-4000-8000-000000000002",
        "rudder-7d9f_9a8b7c6d-0000-4000-8000-000000000003",
    ];

    #[test]
    fn no_members_no_owner() {
        assert_eq!(owner("ns/a", std::iter::empty()), None);
    }

    #[test]
    fn stable_and_independent_of_member_order() {
        let keys = keys(500);
        let a = assign(&keys, &THREE);
        let mut reversed = THREE;
        reversed.reverse();
        assert_eq!(a, assign(&keys, &reversed));
        assert_eq!(a, assign(&keys, &THREE), "the same input, the same answer");
        // Fixed values: a change of hash would split replicas of two builds.
        assert_eq!(fingerprint(b"rudder"), fingerprint(b"rudder"));
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn balanced_over_three_thousand_keys() {
        let keys = keys(3000);
        for members in [&THREE[..], &THREE[..2]] {
            let mut share: HashMap<&str, usize> = HashMap::new();
            for m in assign(&keys, members) {
                *share.entry(m).or_default() += 1;
            }
            let fair = keys.len() / members.len();
            for m in members {
                let got = share.get(m).copied().unwrap_or(0);
                // Within 10 % of a fair share (binomial spread is about 1.5 % here).
                assert!(
                    got.abs_diff(fair) * 10 <= fair,
                    "{m} owns {got} of {}, a fair share is {fair}: {share:?}",
                    keys.len()
                );
            }
        }
    }

    #[test]
    fn a_join_moves_only_what_the_newcomer_gains() {
        let keys = keys(3000);
        let before = assign(&keys, &THREE[..2]);
        let after = assign(&keys, &THREE);
        let mut moved = 0;
        for (b, a) in before.iter().zip(&after) {
            if b != a {
                assert_eq!(*a, THREE[2], "a key moved between two old members");
                moved += 1;
            }
        }
        // About a third moves to the newcomer.
        assert!((900..=1100).contains(&moved), "{moved} of 3000 moved");
    }

    #[test]
    fn a_leave_moves_only_what_the_leaver_held() {
        let keys = keys(3000);
        let before = assign(&keys, &THREE);
        let after = assign(&keys, &[THREE[0], THREE[2]]);
        for (b, a) in before.iter().zip(&after) {
            if *b != THREE[1] {
                assert_eq!(b, a, "a key of a remaining member moved");
            } else {
                assert_ne!(*a, THREE[1]);
            }
        }
    }
}
