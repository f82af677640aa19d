//! The arithmetic of the wave collectives (XPU §2.7, §5.3), separate from the scheduling that
//! decides which lanes take part (see [`super::lanes`]).
//!
//! A collective sees one slot per lane of its wave (`W` slots, also for a partial last wave):
//! `Some(cell)` for an active lane, `None` for a lane that is not (it returned, or it does not
//! exist because the block's item count is not a multiple of `W`).

use cajeta_bytecode::{float, Op};

/// The largest wave width any `cpu` launch may use (`@Wave(width = N)`, N ≤ 64, XPU §8.2).
pub(crate) const MAX_WAVE: usize = 64;

/// A wave collective the interpreter stops at.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum WaveOp {
    /// `wave.sum.u32`: wrapping uint32 sum over the active lanes.
    SumU32,
    /// `wave.sum.f32`: the float32 butterfly sum of §5.3.
    SumF32,
    /// `wave.max.u32`: unsigned maximum.
    MaxU32,
    /// `wave.min.u32`: unsigned minimum.
    MinU32,
    /// `wave.and.u32`: bitwise and.
    AndU32,
    /// `wave.or.u32`: bitwise or.
    OrU32,
    /// `wave.xor.u32`: bitwise xor.
    XorU32,
    /// `wave.max.f32`: the float32 butterfly with `maxNum` (§5.3).
    MaxF32,
    /// `wave.scanadd.u32`: exclusive wrapping prefix sum.
    ScanAddU32,
    /// `wave.scanmul.u32`: exclusive wrapping prefix product.
    ScanMulU32,
    /// `wave.shfl.u32`: the value of lane `src mod W` (operand cell: value, source << 32).
    Shuffle,
    /// `wave.rot.u32`: the value of lane `(laneId + d) mod W` (operand cell: value, d << 32).
    Rotate,
    /// `wave.ballot`: bit i set iff lane i is active and its boolean holds.
    Ballot,
    /// `wave.barrier`: a rendezvous without a value (`Barrier.wave()`).
    Sync,
}

impl WaveOp {
    /// The collective an opcode performs, if it is one.
    pub(crate) fn of(op: Op) -> Option<WaveOp> {
        Some(match op {
            Op::WaveSumU32 => WaveOp::SumU32,
            Op::WaveSumF32 => WaveOp::SumF32,
            Op::WaveMaxU32 => WaveOp::MaxU32,
            Op::WaveMinU32 => WaveOp::MinU32,
            Op::WaveAndU32 => WaveOp::AndU32,
            Op::WaveOrU32 => WaveOp::OrU32,
            Op::WaveXorU32 => WaveOp::XorU32,
            Op::WaveMaxF32 => WaveOp::MaxF32,
            Op::WaveScanAddU32 => WaveOp::ScanAddU32,
            Op::WaveScanMulU32 => WaveOp::ScanMulU32,
            Op::WaveShflU32 => WaveOp::Shuffle,
            Op::WaveRotU32 => WaveOp::Rotate,
            Op::WaveBallot => WaveOp::Ballot,
            Op::WaveBarrier => WaveOp::Sync,
            _ => return None,
        })
    }

    /// True if the collective writes a result register (all but `Barrier.wave()`).
    pub(crate) fn has_result(self) -> bool {
        self != WaveOp::Sync
    }
}

/// Computes `op` over `lanes` (one slot per lane, `lanes.len()` = W, a power of two at most
/// [`MAX_WAVE`]) and writes each lane's result cell to `out[j]` (for inactive lanes too;
/// nobody reads those).
///
/// # Errors
/// The first active lane (in lane order) whose shuffle or rotate source lane is inactive
/// (`XPU-E-DIVERGENT` on `cpu`), and that source lane.
pub(crate) fn reduce(
    op: WaveOp,
    lanes: &[Option<u64>],
    out: &mut [u64],
) -> Result<(), (usize, usize)> {
    let w = lanes.len().min(MAX_WAVE).min(out.len());
    let lo = |v: &u64| *v as u32;
    let all = |out: &mut [u64], v: u32| out.iter_mut().for_each(|o| *o = u64::from(v));
    let fold = |init: u32, f: fn(u32, u32) -> u32| lanes.iter().flatten().map(lo).fold(init, f);
    match op {
        WaveOp::SumU32 => all(out, fold(0, u32::wrapping_add)),
        WaveOp::MaxU32 => all(out, fold(0, u32::max)),
        WaveOp::MinU32 => all(out, fold(u32::MAX, u32::min)),
        WaveOp::AndU32 => all(out, fold(u32::MAX, |a, b| a & b)),
        WaveOp::OrU32 => all(out, fold(0, |a, b| a | b)),
        WaveOp::XorU32 => all(out, fold(0, |a, b| a ^ b)),
        WaveOp::SumF32 | WaveOp::MaxF32 => {
            let sum = op == WaveOp::SumF32;
            // Inactive lanes contribute +0.0 (sum) or -inf (max).
            let mut a = [if sum { 0.0f32 } else { f32::NEG_INFINITY }; MAX_WAVE];
            for (slot, lane) in a.iter_mut().zip(&lanes[..w]) {
                if let Some(v) = lane {
                    *slot = f32::from_bits(*v as u32);
                }
            }
            let f: fn(f32, f32) -> f32 = if sum { |x, y| x + y } else { float::max_f32 };
            butterfly(&mut a[..w], f);
            for (o, v) in out.iter_mut().zip(&a[..w]) {
                *o = u64::from(v.to_bits());
            }
        }
        WaveOp::ScanAddU32 | WaveOp::ScanMulU32 => {
            let add = op == WaveOp::ScanAddU32;
            let mut acc: u32 = if add { 0 } else { 1 };
            for (o, lane) in out.iter_mut().zip(&lanes[..w]) {
                *o = u64::from(acc);
                if let Some(v) = lane {
                    acc = if add {
                        acc.wrapping_add(*v as u32)
                    } else {
                        acc.wrapping_mul(*v as u32)
                    };
                }
            }
        }
        WaveOp::Shuffle | WaveOp::Rotate => {
            for j in 0..w {
                let Some(cell) = lanes[j] else { continue };
                let n = (cell >> 32) as usize;
                // W is a power of two, so `mod W` is a mask.
                let src = (if op == WaveOp::Shuffle { n } else { j + n }) & (w - 1);
                match lanes[src] {
                    Some(v) => out[j] = u64::from(v as u32),
                    None => return Err((j, src)),
                }
            }
        }
        WaveOp::Ballot => {
            let bits = lanes[..w]
                .iter()
                .enumerate()
                .filter(|(_, l)| matches!(l, Some(v) if *v != 0))
                .fold(0u64, |acc, (j, _)| acc | 1 << j);
            out.iter_mut().for_each(|o| *o = bits);
        }
        WaveOp::Sync => {}
    }
    Ok(())
}

/// The butterfly of XPU §5.3 on `a` (length W, a power of two): for d = 1, 2, 4, …, W/2 in this
/// order, every lane simultaneously sets `a[j] = a[j] ⊕ a[j xor d]`, one float32 rounding each.
fn butterfly(a: &mut [f32], op: fn(f32, f32) -> f32) {
    let w = a.len();
    let mut prev = [0.0f32; MAX_WAVE];
    let mut d = 1;
    while d < w {
        prev[..w].copy_from_slice(a);
        for (j, x) in a.iter_mut().enumerate() {
            // j xor d < w for a power-of-two w.
            if let Some(&y) = prev.get(j ^ d) {
                *x = op(*x, y);
            }
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
        reduce(WaveOp::SumU32, &lanes, &mut out).unwrap();
        // Only the low 32 bits of a cell are the uint32 (canonical cells never have more).
        assert_eq!(out, [6; 4]);
    }

    #[test]
    fn float_butterfly_pairs_neighbours_first() {
        // d = 1 pairs (0,1), (2,3); d = 2 adds the pair sums: (1e8 + 1) + (-1e8 + 1) = 0 in
        // float32, where a left-to-right sum would give 1.
        let lanes = [f(1e8), f(1.0), f(-1e8), f(1.0)];
        let mut out = [0; 4];
        reduce(WaveOp::SumF32, &lanes, &mut out).unwrap();
        assert_eq!(out, [0; 4]);
        // An inactive lane is +0.0: -0.0 + +0.0 is +0.0.
        let lanes = [f(-0.0), None];
        let mut out = [0; 2];
        reduce(WaveOp::SumF32, &lanes, &mut out).unwrap();
        assert_eq!(out, [0; 2]);
        // ... and all lanes active at -0.0 keep -0.0.
        let lanes = [f(-0.0), f(-0.0)];
        reduce(WaveOp::SumF32, &lanes, &mut out).unwrap();
        assert_eq!(out, [u64::from((-0.0f32).to_bits()); 2]);
    }

    fn u(v: u32) -> Option<u64> {
        Some(u64::from(v))
    }

    #[test]
    fn integer_reductions_and_exclusive_scans() {
        let lanes = [u(6), None, u(3), u(0xF0)];
        let mut out = [0; 4];
        let mut run = |op| {
            reduce(op, &lanes, &mut out).unwrap();
            out
        };
        assert_eq!(run(WaveOp::MaxU32), [0xF0; 4]);
        assert_eq!(run(WaveOp::MinU32), [3; 4]);
        assert_eq!(run(WaveOp::AndU32), [0; 4]);
        assert_eq!(run(WaveOp::OrU32), [0xF7; 4]);
        assert_eq!(run(WaveOp::XorU32), [6 ^ 3 ^ 0xF0; 4]);
        assert_eq!(run(WaveOp::ScanAddU32)[..1], [0]);
        assert_eq!(run(WaveOp::ScanAddU32)[2..], [6, 9]);
        assert_eq!(run(WaveOp::ScanMulU32)[2..], [6, 18]);
        assert_eq!(run(WaveOp::Ballot), [0b1101; 4]);
    }

    #[test]
    fn shuffle_and_rotate_read_other_lanes_and_fault_on_inactive_ones() {
        let with = |v: u32, n: u64| Some(u64::from(v) | n << 32);
        let mut out = [0; 4];
        let lanes = [with(10, 3), with(11, 7), with(12, 0), with(13, 1)];
        reduce(WaveOp::Shuffle, &lanes, &mut out).unwrap();
        assert_eq!(out, [13, 13, 10, 11]);
        reduce(WaveOp::Rotate, &lanes, &mut out).unwrap();
        assert_eq!(out, [13, 10, 12, 10]);
        let lanes = [with(10, 1), None, with(12, 0), with(13, 0)];
        assert_eq!(reduce(WaveOp::Shuffle, &lanes, &mut out), Err((0, 1)));
        assert_eq!(reduce(WaveOp::Rotate, &lanes, &mut out), Err((0, 1)));
    }

    #[test]
    fn float_max_butterfly_ignores_nan_and_inactive_lanes() {
        let lanes = [f(f32::NAN), f(-3.0), None, f(-1.5)];
        let mut out = [0; 4];
        reduce(WaveOp::MaxF32, &lanes, &mut out).unwrap();
        assert_eq!(out, [u64::from((-1.5f32).to_bits()); 4]);
        // -0 < +0 (IEEE 754-2019 maximumNumber), whichever lane holds which.
        let zeros = [f(-0.0), f(0.0), f(-0.0), None];
        reduce(WaveOp::MaxF32, &zeros, &mut out).unwrap();
        assert_eq!(out, [u64::from(0.0f32.to_bits()); 4]);
    }
}
