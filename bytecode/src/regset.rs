//! [`RegSet`]: a set of the registers of one frame, for the dataflow analyses over bytecode
//! (the verifier's definite assignment, the JIT's kernel liveness).

/// A set of register indices of one frame (a bit per register).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct RegSet(Vec<u64>);

impl RegSet {
    /// The empty set for a frame of `n` registers.
    pub fn new(n: usize) -> RegSet {
        RegSet(vec![0; n.div_ceil(64)])
    }

    /// Adds `r` (nothing if it is outside the frame).
    pub fn insert(&mut self, r: u16) {
        if let Some(w) = self.0.get_mut(usize::from(r) / 64) {
            *w |= 1 << (r % 64);
        }
    }

    /// Removes `r`.
    pub fn remove(&mut self, r: u16) {
        if let Some(w) = self.0.get_mut(usize::from(r) / 64) {
            *w &= !(1 << (r % 64));
        }
    }

    /// Whether `r` is in the set.
    pub fn contains(&self, r: u16) -> bool {
        self.0
            .get(usize::from(r) / 64)
            .is_some_and(|w| w & (1 << (r % 64)) != 0)
    }

    /// Adds every register of `other` (a set of the same frame).
    pub fn union_with(&mut self, other: &RegSet) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
    }

    /// Keeps only the registers also in `other`; true if the set changed.
    pub fn intersect_with(&mut self, other: &RegSet) -> bool {
        let mut changed = false;
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            let new = *a & b;
            changed |= new != *a;
            *a = new;
        }
        changed
    }
}
