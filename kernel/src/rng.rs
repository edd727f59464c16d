//! The canonical RNG: xoshiro256** seeded through SplitMix64.
//!
//! Its four words of state live in canonical state (`rng`), so a snapshot
//! resumes the same stream. See `docs/determinism.md` for the exact algorithm
//! and pinned test vectors.

use crate::value::{object, Value};

/// xoshiro256** state. Never all zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng {
    s: [u64; 4],
}

/// One SplitMix64 step: advances `state` and returns the mixed output.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniformly random order of `0..n` (Fisher–Yates, each swap index a
/// [`splitmix64`] output modulo the range), drawn from `state`: what bots
/// outside the game's own randomness use (simulate's, the server's).
pub fn splitmix_order(state: &mut u64, n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let bound = u64::try_from(i + 1).unwrap_or(u64::MAX);
        let j = usize::try_from(splitmix64(state) % bound).unwrap_or(0);
        order.swap(i, j);
    }
    order
}

/// Divisors served by [`rem`] without a division (every deck size a table
/// is likely to shuffle).
const FASTMOD_MAX: u64 = 256;

/// `ceil(2^128 / d)` for `d` in `2..=FASTMOD_MAX` (index `d`): Lemire's
/// "faster remainder by direct computation" constants, computed at compile
/// time.
static FASTMOD: [u128; FASTMOD_LEN] = fastmod_table();

/// Entries of [`FASTMOD`] (a small constant: the cast is exact).
#[allow(clippy::cast_possible_truncation)]
const FASTMOD_LEN: usize = FASTMOD_MAX as usize + 1;

const fn fastmod_table() -> [u128; FASTMOD_LEN] {
    let mut t = [0u128; FASTMOD_LEN];
    let mut d = 2;
    while d < FASTMOD_LEN {
        t[d] = u128::MAX / d as u128 + 1;
        d += 1;
    }
    t
}

/// `r % n`, exactly, by two multiplications when `n` is small (a 64-bit
/// division costs more than the rest of a shuffle step). With a 128-bit
/// constant the result is exact for every 64-bit `r` (Lemire, Kaser &
/// Kurz 2019); `rem_matches_the_remainder` checks it against `%`.
// The casts are the algorithm's: `n` ≤ FASTMOD_MAX indexes the table, the
// low half of a u128 is taken on purpose, and the final shift leaves a value
// below `n`.
#[allow(clippy::cast_possible_truncation)]
fn rem(r: u64, n: u64) -> u64 {
    if (2..=FASTMOD_MAX).contains(&n) {
        let low = FASTMOD[n as usize].wrapping_mul(u128::from(r));
        let d = u128::from(n);
        let lo = u128::from(low as u64) * d;
        let hi = (low >> 64) * d;
        ((hi + (lo >> 64)) >> 64) as u64
    } else {
        r % n
    }
}

impl Rng {
    /// Seeds the four state words with four consecutive SplitMix64 outputs.
    pub fn from_seed(seed: u64) -> Rng {
        let mut sm = seed;
        let s = [
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
        ];
        Rng::from_state(s).unwrap_or(Rng { s: [1, 0, 0, 0] })
    }

    /// Resumes from saved state words; `None` for the forbidden all-zero state.
    pub fn from_state(s: [u64; 4]) -> Option<Rng> {
        (s != [0; 4]).then_some(Rng { s })
    }

    /// The raw state words.
    pub fn state(&self) -> [u64; 4] {
        self.s
    }

    /// The next 64-bit output (xoshiro256**).
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// A uniform index in `[0, n)` by rejection sampling: outputs below
    /// `2^64 mod n` are drawn again, the rest are reduced `mod n`.
    ///
    /// # Panics
    /// Debug builds assert `n > 0`; release builds return 0 for `n == 0`.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0, "below(0) has no valid result");
        if n == 0 {
            return 0;
        }
        // Reject r < 2^64 mod n (the threshold), so every result is equally
        // likely. The threshold is below n, so any r >= n is accepted without
        // computing it: one division per draw instead of two, same results.
        loop {
            let r = self.next_u64();
            if r >= n || r >= n.wrapping_neg() % n {
                return rem(r, n);
            }
        }
    }

    /// Fisher–Yates from the last index down: for `i` from `len-1` to 1,
    /// swap `i` with `below(i + 1)`.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = crate::num::to_usize(self.below(i as u64 + 1));
            items.swap(i, j);
        }
    }

    /// Undoes [`Rng::shuffle`] of `items` when `self` is the state that
    /// shuffle started from: the same swaps, drawn again, applied in
    /// reverse order.
    pub fn unshuffle<T>(&mut self, items: &mut [T]) {
        let swaps: Vec<(usize, usize)> = (1..items.len())
            .rev()
            .map(|i| (i, crate::num::to_usize(self.below(i as u64 + 1))))
            .collect();
        for &(i, j) in swaps.iter().rev() {
            items.swap(i, j);
        }
    }

    /// The generator's four state words.
    pub fn words(&self) -> [u64; 4] {
        self.s
    }

    /// A generator resumed from its four state words.
    pub fn from_words(s: [u64; 4]) -> Rng {
        Rng { s }
    }

    /// Canonical form: the four words as 16-digit lowercase hex strings.
    pub fn to_value(&self) -> Value {
        object([
            ("algorithm", Value::from("xoshiro256**")),
            (
                "state",
                Value::Array(
                    self.s
                        .iter()
                        .map(|w| Value::String(format!("{w:016x}")))
                        .collect(),
                ),
            ),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rem_matches_the_remainder() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for n in 1..=FASTMOD_MAX + 3 {
            let edges = [
                0,
                1,
                n - 1,
                n,
                n + 1,
                u64::MAX,
                u64::MAX - 1,
                u64::MAX / n * n,
            ];
            for r in edges {
                assert_eq!(rem(r, n), r % n, "{r} % {n}");
            }
            for _ in 0..2000 {
                x = splitmix64(&mut x);
                assert_eq!(rem(x, n), x % n, "{x} % {n}");
            }
        }
    }

    #[test]
    fn unshuffle_restores_every_length() {
        for n in [0usize, 1, 2, 3, 26, 52, 300] {
            let original: Vec<usize> = (0..n).collect();
            let start = Rng::from_seed(n as u64 + 7);
            let mut items = original.clone();
            let mut rng = start.clone();
            rng.shuffle(&mut items);
            if n >= 26 {
                assert_ne!(items, original, "n = {n}: the shuffle moved nothing");
            }
            start.clone().unshuffle(&mut items);
            assert_eq!(items, original, "n = {n}");
        }
    }

    #[test]
    fn splitmix64_matches_reference_vector() {
        // Reference outputs of SplitMix64 seeded with 0 (Vigna's splitmix64.c).
        let mut s = 0u64;
        assert_eq!(splitmix64(&mut s), 0xe220_a839_7b1d_cdaf);
        assert_eq!(splitmix64(&mut s), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(splitmix64(&mut s), 0x06c4_5d18_8009_454f);
    }

    /// The vectors published in docs/determinism.md, computed independently
    /// (a Python transcription of the reference C code).
    #[test]
    fn pinned_vectors_match_docs() {
        let mut r = Rng::from_seed(0);
        assert_eq!(
            r.state(),
            [
                0xe220a8397b1dcdaf,
                0x6e789e6aa1b965f4,
                0x06c45d188009454f,
                0xf88bb8a8724c81ec
            ]
        );
        assert_eq!(r.next_u64(), 0x99ec5f36cb75f2b4);
        assert_eq!(r.next_u64(), 0xbf6e1f784956452a);
        assert_eq!(r.next_u64(), 0x1a5f849d4933e6e0);
        let mut r = Rng::from_seed(42);
        assert_eq!(
            r.state(),
            [
                0xbdd732262feb6e95,
                0x28efe333b266f103,
                0x47526757130f9f52,
                0x581ce1ff0e4ae394
            ]
        );
        assert_eq!(r.next_u64(), 0x15780b2e0c2ec716);
        let mut r = Rng::from_seed(42);
        let rolls: Vec<u64> = (0..10).map(|_| r.below(6)).collect();
        assert_eq!(rolls, vec![0, 0, 5, 5, 4, 0, 4, 3, 4, 5]);
        let mut r = Rng::from_seed(42);
        let mut v: Vec<u32> = (0..10).collect();
        r.shuffle(&mut v);
        assert_eq!(v, vec![7, 3, 8, 9, 5, 6, 4, 1, 0, 2]);
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut rng = Rng::from_seed(7);
        let mut seen = [false; 6];
        for _ in 0..600 {
            let i = usize::try_from(rng.below(6)).expect("below 6");
            seen[i] = true;
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(rng.below(1), 0);
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut rng = Rng::from_seed(1);
        let mut v: Vec<u32> = (0..52).collect();
        rng.shuffle(&mut v);
        let mut sorted = v.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..52).collect::<Vec<_>>());
        assert_ne!(v, sorted);
    }

    #[test]
    fn all_zero_state_is_refused() {
        assert!(Rng::from_state([0; 4]).is_none());
    }
}
