//! Number conversions the canonical paths use, each exact where it is used.
//! The lint policy (the workspace `Cargo.toml`) refuses bare lossy `as`
//! casts; these are the few places that convert, with the reason each one
//! cannot lose anything.

/// A count, index or sequence number as a JSON number. Exact: every count
/// the kernel keeps (entities, items, cards, sequence numbers) stays far
/// below 2^53, where every integer is a double.
#[inline]
pub(crate) fn count_to_f64(n: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let x = n as f64;
    x
}

/// A payload number already checked to be an integer in 0 ..= 2^53 - 1,
/// as `u64`. Exact: such a double is an integer that fits.
#[inline]
pub(crate) fn safe_int_to_u64(n: f64) -> u64 {
    debug_assert!(n >= 0.0 && n.fract() == 0.0 && n <= 9_007_199_254_740_991.0);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let x = n as u64;
    x
}

/// A checked safe integer (|n| ≤ 2^53 - 1, integral) as `i64`. Exact.
#[inline]
pub(crate) fn safe_int_to_i64(n: f64) -> i64 {
    debug_assert!(n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0);
    #[allow(clippy::cast_possible_truncation)]
    let x = n as i64;
    x
}

/// An index or count as `usize`. Every caller has already bounded it by
/// the length of a list it holds, so it fits; on a target where it would
/// not, it saturates (and the caller's bound has refused it before).
#[inline]
pub(crate) fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}
