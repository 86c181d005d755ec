//! Randomness without the OS: retry jitter and random identifiers from an injected generator.
//!
//! Drivers seed from OS entropy, the simulator from its seed. Each machine keeps a [`SplitMix64`]
//! seeded once from the injected generator, so its jitter is reproducible and costs no call out.

use std::convert::Infallible;
use std::time::Duration;

use rand_core::{Rng, TryRng};

/// A tiny, fast generator (Steele, Lea and Flood's SplitMix64) for retry jitter.
///
/// Not for secrets: tokens come straight from the injected generator instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose sequence is fixed by `seed`.
    pub const fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// A generator seeded from `rng`.
    pub fn from_rng<R: Rng + ?Sized>(rng: &mut R) -> Self {
        Self::new(rng.next_u64())
    }

    fn step(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl TryRng for SplitMix64 {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok((self.step() >> 32) as u32)
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(self.step())
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(8) {
            let bytes = self.step().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}

/// Maps 64 random bits to a uniform value in `[0, 1)` (the top 53 bits, as `random.random()`).
pub fn unit_interval(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// The jittered retry sleep: `base * (1 + jitter * (2r - 1))`, grelmicro's formula, so the factor
/// lies in `[1 - jitter, 1 + jitter)` for `r` in `[0, 1)`. `jitter == 0` returns `base` exactly.
///
/// Never panics: an out-of-range `r` or `jitter` (which validated configs cannot produce) yields
/// `base`.
pub fn jitter(base: Duration, jitter: f64, r: f64) -> Duration {
    if jitter == 0.0 {
        return base;
    }
    let factor = 1.0 + jitter * (2.0 * r - 1.0);
    if !(factor.is_finite() && factor > 0.0) {
        return base;
    }
    Duration::try_from_secs_f64(base.as_secs_f64() * factor).unwrap_or(base)
}

/// `bytes` random bytes from `rng` as lowercase hex (Python's `secrets.token_hex(bytes)`).
pub fn random_hex<R: Rng + ?Sized>(rng: &mut R, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes * 2);
    push_random_hex(&mut out, rng, bytes);
    out
}

/// Appends `bytes` random bytes from `rng` as lowercase hex.
pub fn push_random_hex<R: Rng + ?Sized>(out: &mut String, rng: &mut R, bytes: usize) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut left = bytes;
    while left > 0 {
        let word = rng.next_u64().to_le_bytes();
        for &b in word.iter().take(left) {
            out.push(char::from(DIGITS[usize::from(b >> 4)]));
            out.push(char::from(DIGITS[usize::from(b & 0xf)]));
        }
        left = left.saturating_sub(8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_matches_grelmicro_formula_for_a_pinned_value() {
        // spec §3.1: 0.2 * (1 + 0.4 * (2 * 0.75 - 1)) = 0.24
        let d = jitter(Duration::from_millis(200), 0.4, 0.75);
        assert_eq!(d, Duration::from_millis(240));
        assert_eq!(jitter(Duration::from_millis(200), 0.0, 0.75), Duration::from_millis(200));
        // r = 1.0 (the pinned upper value of the reference tests) still gives a finite sleep.
        assert_eq!(jitter(Duration::from_secs(1), 0.5, 1.0), Duration::from_millis(1500));
        assert_eq!(jitter(Duration::from_secs(1), 0.5, f64::NAN), Duration::from_secs(1));
    }

    #[test]
    fn unit_interval_covers_zero_to_one_exclusive() {
        assert_eq!(unit_interval(0), 0.0);
        assert!(unit_interval(u64::MAX) < 1.0);
        assert_eq!(unit_interval(0xC000_0000_0000_0000), 0.75);
    }

    #[test]
    fn splitmix_is_reproducible_and_hex_has_the_right_shape() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        assert_eq!(a.next_u64(), b.next_u64());
        let hex = random_hex(&mut a, 8);
        assert_eq!(hex.len(), 16);
        assert!(hex.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(hex, random_hex(&mut a, 8));
    }
}
