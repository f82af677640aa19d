//! Small pure helpers of the instruction semantics: canonical integer forms, float cell
//! conversions and the `Math` functions. All are `#[inline(always)]` so each interpreter arm
//! stays a few machine instructions.

/// Re-canonicalises the low 8 bits as `int8` (sign-extended).
#[inline(always)]
pub(crate) fn sx8(x: u64) -> u64 {
    x as i8 as i64 as u64
}

/// Re-canonicalises the low 16 bits as `int16`.
#[inline(always)]
pub(crate) fn sx16(x: u64) -> u64 {
    x as i16 as i64 as u64
}

/// Re-canonicalises the low 32 bits as `int32`.
#[inline(always)]
pub(crate) fn sx32(x: u64) -> u64 {
    x as i32 as i64 as u64
}

/// The identity on int64 cells (the canonical form of int64 is the value itself).
#[inline(always)]
pub(crate) fn id64(x: u64) -> u64 {
    x
}

/// The `float32` in a cell.
#[inline(always)]
pub(crate) fn f32b(x: u64) -> f32 {
    f32::from_bits(x as u32)
}

/// The cell of a `float32` (bits in the low half, high half zero).
#[inline(always)]
pub(crate) fn bf32(x: f32) -> u64 {
    x.to_bits() as u64
}

/// The `float64` in a cell.
#[inline(always)]
pub(crate) fn f64b(x: u64) -> f64 {
    f64::from_bits(x)
}

/// The cell of a `float64`.
#[inline(always)]
pub(crate) fn bf64(x: f64) -> u64 {
    x.to_bits()
}

/// Signed minimum of two canonical cells.
#[inline(always)]
pub(crate) fn smin(x: u64, y: u64) -> u64 {
    if (x as i64) <= (y as i64) {
        x
    } else {
        y
    }
}

/// Signed maximum of two canonical cells.
#[inline(always)]
pub(crate) fn smax(x: u64, y: u64) -> u64 {
    if (x as i64) >= (y as i64) {
        x
    } else {
        y
    }
}

/// `MathFn` `sel` on a `float64` (see [`cajeta_bytecode::MathFn::eval_f64`]).
#[inline]
pub(crate) fn math1_f64(sel: u16, x: f64) -> f64 {
    cajeta_bytecode::MathFn::eval_f64_sel(sel, x)
}

/// `MathFn` `sel` on a `float32` (see [`cajeta_bytecode::MathFn::eval_f32`]).
#[inline]
pub(crate) fn math1_f32(sel: u16, x: f32) -> f32 {
    cajeta_bytecode::MathFn::eval_f32_sel(sel, x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cajeta_bytecode::MathFn;

    #[test]
    fn canonical_forms() {
        assert_eq!(sx8(0x80) as i64, -128);
        assert_eq!(sx8(0x1_7f), 127);
        assert_eq!(sx16(0xffff) as i64, -1);
        assert_eq!(sx32(0x8000_0000) as i64, i32::MIN as i64);
        assert_eq!(bf32(-1.0), 0xbf80_0000);
    }

    #[test]
    fn math_selectors_follow_the_table() {
        for f in MathFn::ALL {
            let sel = f as u16;
            let x = 0.3f64;
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
            assert_eq!(math1_f64(sel, x), want, "{}", f.name());
        }
        assert_eq!(math1_f64(4, -2.5), -3.0, "round half away from zero");
        assert_eq!(math1_f32(4, 2.5), 3.0);
        assert!(math1_f64(99, 1.0).is_nan());
    }

    #[test]
    fn f32_transcendentals_round_once_from_f64() {
        let x = 0.7f32;
        assert_eq!(math1_f32(MathFn::Sin as u16, x), (x as f64).sin() as f32);
        assert_eq!(
            math1_f32(MathFn::Rsqrt as u16, 3.0),
            (1.0 / 3.0f64.sqrt()) as f32
        );
    }
}
