//! A hash map for the small integer keys (thread ids, timer addresses) the tracker looks
//! up several times per event. The standard SipHash costs a quarter of the analysis
//! time there; a multiply-and-fold hash is enough for keys that are already numbers,
//! and the final fold keeps keys that differ only in high bits (kernel addresses) apart.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Hasher for integer keys.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IntHasher(u64);

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        // A final fold and multiply (as in MurmurHash3's finalizer) so that every input
        // bit reaches the low bits the table indexes with.
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^ (x >> 33)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(K);
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_i32(&mut self, n: i32) {
        self.write_u64(u64::from(n as u32));
    }
}

/// `HashMap` with [`IntHasher`].
pub(crate) type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_differing_in_high_bits_spread() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..64u64 {
            let mut h = IntHasher::default();
            h.write_u64(0xffff_c900_0000_0000 ^ (i << 40));
            seen.insert(h.finish() & 0xff);
        }
        assert!(seen.len() > 32, "{}", seen.len());
    }
}
