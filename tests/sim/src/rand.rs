//! All of a run's randomness, from one seed split into named streams: adding a draw to one stream
//! (say, the network's) leaves every other stream's sequence as it was.

use rand_core::Rng;
use tenure_core::SplitMix64;

/// One named stream of a seed.
#[derive(Clone, Debug)]
pub struct Stream(SplitMix64);

impl Stream {
    /// The stream `name` of `seed`.
    pub fn new(seed: u64, name: &str) -> Self {
        let mut mix = SplitMix64::new(seed ^ fnv1a(name.as_bytes()));
        Self(SplitMix64::new(mix.next_u64()))
    }

    /// 64 random bits.
    pub fn bits(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        tenure_core::rng::unit_interval(self.bits())
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// Uniform in `[low, high]` (`low` when `high <= low`).
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        if high <= low {
            return low;
        }
        low + self.bits() % (high - low + 1)
    }

    /// Uniform in `[low, high)` as a float.
    pub fn float(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.unit()
    }

    /// An exponentially distributed wait with the given mean, in nanoseconds (for fault arrivals).
    pub fn exponential(&mut self, mean: u64) -> u64 {
        let u = 1.0 - self.unit(); // (0, 1]
        let wait = -(u.ln()) * mean as f64;
        // Bounded, so a tiny `u` cannot overflow the clock.
        wait.min(mean as f64 * 40.0) as u64
    }

    /// A new stream drawn from this one (one per client).
    pub fn child(&mut self) -> Self {
        Self(SplitMix64::new(self.bits()))
    }

    /// A generator for the core (identifiers, jitter seeds).
    pub fn fork(&mut self) -> SplitMix64 {
        SplitMix64::new(self.bits())
    }
}

/// FNV-1a, for stream names and trace hashes.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}
