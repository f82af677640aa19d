//! This crate's own `extern "C"` helpers, called by JIT code: the error-path trace push and
//! the float functions Cranelift has no instruction for (float16/bfloat16 conversions among
//! them: the `cajeta_bytecode::half` functions every executor shares).
//!
//! Each float helper is the interpreter's expression verbatim (`vm/src/interp/ops.rs`), so
//! both tiers call the same Rust standard-library routines and round identically. None can
//! panic (pure float arithmetic); [`trace_push`] catches anything that could.

use std::panic::{catch_unwind, AssertUnwindSafe};

use cajeta_bytecode::half;

use crate::context::{JitContext, TraceEntry};

/// Appends the frame `(func, pc)` to the context's error trace (the cold path of every
/// nonzero status).
///
/// # Safety
///
/// `ctx` must be the live context the JIT code was entered with.
pub(crate) unsafe extern "C" fn trace_push(ctx: *mut JitContext, func: u32, pc: u32) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the caller's contract: `ctx` is valid and not otherwise borrowed while JIT
        // code runs (the embedder handed it over for the duration of the call).
        let ctx = unsafe { &mut *ctx };
        ctx.trace.push(TraceEntry { func, pc });
    }));
}

/// Appends the frame `(func, pc)` `n` times: the frames a tail-call loop stands for
/// (`crate::tail`).
///
/// # Safety
///
/// As [`trace_push`].
pub(crate) unsafe extern "C" fn trace_push_repeated(
    ctx: *mut JitContext,
    func: u32,
    pc: u32,
    n: u64,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: as in `trace_push`.
        let ctx = unsafe { &mut *ctx };
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        ctx.trace
            .extend(std::iter::repeat_n(TraceEntry { func, pc }, n));
    }));
}

/// `rem.f64`: `fmod`.
pub(crate) extern "C" fn rem_f64(x: f64, y: f64) -> f64 {
    x % y
}

/// `rem.f32`: `fmodf`.
pub(crate) extern "C" fn rem_f32(x: f32, y: f32) -> f32 {
    x % y
}

/// `pow.f64`.
pub(crate) extern "C" fn pow_f64(x: f64, y: f64) -> f64 {
    x.powf(y)
}

/// `pow.f32`: computed in float64, rounded once.
pub(crate) extern "C" fn pow_f32(x: f32, y: f32) -> f32 {
    (x as f64).powf(y as f64) as f32
}

/// `atan2.f64`.
pub(crate) extern "C" fn atan2_f64(x: f64, y: f64) -> f64 {
    x.atan2(y)
}

/// `atan2.f32`: computed in float64, rounded once.
pub(crate) extern "C" fn atan2_f32(x: f32, y: f32) -> f32 {
    (x as f64).atan2(y as f64) as f32
}

/// `math1.f64` for the selectors without an inline lowering (`MathFn` codes).
pub(crate) extern "C" fn math1_f64(sel: u32, x: f64) -> f64 {
    u16::try_from(sel).map_or(f64::NAN, |s| cajeta_bytecode::MathFn::eval_f64_sel(s, x))
}

/// `math1.f32`: the exact operations directly in float32, the others in float64 rounded once.
pub(crate) extern "C" fn math1_f32(sel: u32, x: f32) -> f32 {
    u16::try_from(sel).map_or(f32::NAN, |s| cajeta_bytecode::MathFn::eval_f32_sel(s, x))
}

/// `cvt.f32.f16`: the float16 bits in the cell's low 16 bits, widened exactly.
pub(crate) extern "C" fn f16_to_f32(cell: u64) -> f32 {
    half::f16_to_f32(cell as u16)
}

/// `cvt.f32.bf16`.
pub(crate) extern "C" fn bf16_to_f32(cell: u64) -> f32 {
    half::bf16_to_f32(cell as u16)
}

/// `cvt.f16.f32`: the canonical float16 cell.
pub(crate) extern "C" fn f32_to_f16(x: f32) -> u64 {
    u64::from(half::f32_to_f16(x))
}

/// `cvt.bf16.f32`.
pub(crate) extern "C" fn f32_to_bf16(x: f32) -> u64 {
    u64::from(half::f32_to_bf16(x))
}

/// `cvt.f16.f64` (one rounding).
pub(crate) extern "C" fn f64_to_f16(x: f64) -> u64 {
    u64::from(half::f64_to_f16(x))
}

/// `cvt.bf16.f64` (one rounding).
pub(crate) extern "C" fn f64_to_bf16(x: f64) -> u64 {
    u64::from(half::f64_to_bf16(x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cajeta_bytecode::MathFn;

    #[test]
    fn selectors_follow_the_bytecode_table() {
        let x = 0.3f64;
        for f in MathFn::ALL {
            let want = match f {
                MathFn::Sqrt => x.sqrt(),
                MathFn::Floor => x.floor(),
                MathFn::Ceil => x.ceil(),
                MathFn::Trunc => x.trunc(),
                MathFn::Round => x.round(),
                MathFn::Abs => x.abs(),
                MathFn::Rsqrt => 1.0 / x.sqrt(),
                MathFn::Sin => x.sin(),
                MathFn::Cos => x.cos(),
                MathFn::Tan => x.tan(),
                MathFn::Asin => x.asin(),
                MathFn::Acos => x.acos(),
                MathFn::Atan => x.atan(),
                MathFn::Exp => x.exp(),
                MathFn::Exp2 => x.exp2(),
                MathFn::Log => x.ln(),
                MathFn::Log2 => x.log2(),
                MathFn::Log10 => x.log10(),
            };
            assert_eq!(
                math1_f64(f as u32, x).to_bits(),
                want.to_bits(),
                "{}",
                f.name()
            );
        }
        assert_eq!(math1_f64(4, -2.5), -3.0);
        assert_eq!(math1_f32(4, 2.5), 3.0);
        assert!(math1_f64(99, 1.0).is_nan());
    }
}
