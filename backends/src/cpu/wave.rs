//! The arithmetic of the wave collectives (XPU §2.7, §5.3), separate from the scheduling that
//! decides which lanes take part (see [`super::lanes`]).
//!
//! A collective sees one slot per lane of its wave (`W` slots, also for a partial last wave):
//! `Some(cell)` for an active lane, `None` for a lane that is not (it returned, or it does not
//! exist because the block's item count is not a multiple of `W`).

use cajeta_bytecode::Op;

/// The largest wave width any `cpu` launch may use (`@Wave(width = N)`, N ≤ 64, XPU §8.2).
pub(crate) const MAX_WAVE: usize = 64;

/// A wave collective the interpreter stops at.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum WaveOp {
    /// `wave.sum.u32`: wrapping uint32 sum over the active lanes.
    SumU32,
    /// `wave.sum.f32`: the float32 butterfly sum of §5.3.
    SumF32,
}

impl WaveOp {
    /// The collective an opcode performs, if it is one.
    pub(crate) fn of(op: Op) -> Option<WaveOp> {
        match op {
            Op::WaveSumU32 => Some(WaveOp::SumU32),
            Op::WaveSumF32 => Some(WaveOp::SumF32),
            _ => None,
        }
    }
}

/// Computes `op` over `lanes` (one slot per lane, `lanes.len()` = W, a power of two at most
/// [`MAX_WAVE`]) and writes each lane's result cell to `out[j]` (for inactive lanes too;
/// nobody reads those).
pub(crate) fn reduce(op: WaveOp, lanes: &[Option<u64>], out: &mut [u64]) {
    match op {
        WaveOp::SumU32 => {
            let sum = lanes
                .iter()
                .flatten()
                .fold(0u32, |acc, &v| acc.wrapping_add(v as u32));
            out.iter_mut().for_each(|o| *o = u64::from(sum));
        }
        WaveOp::SumF32 => {
            let mut a = [0.0f32; MAX_WAVE];
            let w = lanes.len().min(MAX_WAVE);
            for (slot, lane) in a.iter_mut().zip(&lanes[..w]) {
                // Inactive lanes contribute +0.0 (the slot's initial value).
                if let Some(v) = lane {
                    *slot = f32::from_bits(*v as u32);
                }
            }
            butterfly(&mut a[..w]);
            for (o, v) in out.iter_mut().zip(&a[..w]) {
                *o = u64::from(v.to_bits());
            }
        }
    }
}

/// The butterfly of XPU §5.3 on `a` (length W, a power of two): for d = 1, 2, 4, …, W/2 in this
/// order, every lane simultaneously sets `a[j] = a[j] + a[j xor d]`, one float32 rounding each.
fn butterfly(a: &mut [f32]) {
    let w = a.len();
    let mut prev = [0.0f32; MAX_WAVE];
    let mut d = 1;
    while d < w {
        prev[..w].copy_from_slice(a);
        for (j, x) in a.iter_mut().enumerate() {
            // j xor d < w for a power-of-two w; `get` keeps other lengths panic-free.
            *x += prev.get(j ^ d).copied().unwrap_or(0.0);
        }
        d *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: f32) -> Option<u64> {
        Some(u64::from(v.to_bits()))
    }

    #[test]
    fn integer_sum_wraps_and_skips_inactive_lanes() {
        let lanes = [Some(u64::from(u32::MAX)), None, Some(5), Some(1 << 40 | 2)];
        let mut out = [0; 4];
        reduce(WaveOp::SumU32, &lanes, &mut out);
        // Only the low 32 bits of a cell are the uint32 (canonical cells never have more).
        assert_eq!(out, [6; 4]);
    }

    #[test]
    fn float_butterfly_pairs_neighbours_first() {
        // d = 1 pairs (0,1), (2,3); d = 2 adds the pair sums: (1e8 + 1) + (-1e8 + 1) = 0 in
        // float32, where a left-to-right sum would give 1.
        let lanes = [f(1e8), f(1.0), f(-1e8), f(1.0)];
        let mut out = [0; 4];
        reduce(WaveOp::SumF32, &lanes, &mut out);
        assert_eq!(out, [0; 4]);
        // An inactive lane is +0.0: -0.0 + +0.0 is +0.0.
        let lanes = [f(-0.0), None];
        let mut out = [0; 2];
        reduce(WaveOp::SumF32, &lanes, &mut out);
        assert_eq!(out, [0; 2]);
        // ... and all lanes active at -0.0 keep -0.0.
        let lanes = [f(-0.0), f(-0.0)];
        reduce(WaveOp::SumF32, &lanes, &mut out);
        assert_eq!(out, [u64::from((-0.0f32).to_bits()); 2]);
    }
}
