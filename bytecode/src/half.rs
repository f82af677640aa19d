//! Conversions between float32/float64 and the 16-bit float formats `float16` (IEEE binary16) and
//! `bfloat16` (the upper half of a binary32), LANGUAGE §2 and §4 (T2).
//!
//! The 16-bit values travel as their raw bits (`u16`); a register holds them in the low 16 bits of
//! its cell (see [`crate::types`]). Narrowing rounds once, to nearest-even, overflowing to
//! infinity and keeping subnormals; widening is exact. These pure functions are the single
//! implementation used by the compiler (constants), the interpreter, the cpu backend and the JIT's
//! helpers, so every executor rounds the same way.

/// A binary interchange format narrower than float64: exponent and fraction widths.
#[derive(Copy, Clone)]
struct Format {
    /// Exponent field width in bits.
    exp_bits: u32,
    /// Fraction (explicit mantissa) width in bits.
    frac_bits: u32,
}

const F16: Format = Format {
    exp_bits: 5,
    frac_bits: 10,
};
const BF16: Format = Format {
    exp_bits: 8,
    frac_bits: 7,
};

/// Rounds `x` to the format once, to nearest-even (NaN stays NaN, quiet, keeping the top payload
/// bits; overflow gives infinity; results below the normal range are subnormal or zero).
fn narrow(x: f64, f: Format) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 63) as u16) << 15;
    let exp_max = (1u64 << f.exp_bits) - 1;
    let inf = (exp_max << f.frac_bits) as u16;
    if x.is_nan() {
        let payload = ((bits & ((1 << 52) - 1)) >> (52 - f.frac_bits)) as u16;
        return sign | inf | (1 << (f.frac_bits - 1)) | payload;
    }
    if x.is_infinite() {
        return sign | inf;
    }
    let exp_field = ((bits >> 52) & 0x7ff) as i64;
    if exp_field == 0 {
        // Zero or a float64 subnormal: far below half the smallest subnormal of either format.
        return sign;
    }
    let mant = (bits & ((1 << 52) - 1)) | (1 << 52);
    let e = exp_field - 1023;
    let bias = (1i64 << (f.exp_bits - 1)) - 1;
    let emin = 1 - bias;
    // The result's quantum is 2^(te - frac_bits); `n` counts quanta.
    let te = e.max(emin);
    let shift = 52 - i64::from(f.frac_bits) + (te - e);
    let n = if shift >= 64 {
        0 // mant < 2^53, so the value is below half a quantum
    } else {
        let s = shift as u32;
        let n = mant >> s;
        let rem = mant & ((1u64 << s) - 1);
        let half = 1u64 << (s - 1);
        if rem > half || (rem == half && n & 1 == 1) {
            n + 1
        } else {
            n
        }
    };
    // Uniform for normals, subnormals (te == emin) and a carry into the next binade.
    let enc = (((te + bias) as u64) << f.frac_bits) + n - (1u64 << f.frac_bits);
    if enc >= u64::from(inf) {
        sign | inf
    } else {
        sign | enc as u16
    }
}

/// Widens exactly (NaN payload kept in the top fraction bits).
fn widen(h: u16, f: Format) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp_max = (1u32 << f.exp_bits) - 1;
    let exp = (u32::from(h) >> f.frac_bits) & exp_max;
    let frac = u32::from(h) & ((1 << f.frac_bits) - 1);
    if exp == exp_max {
        return f32::from_bits(sign | 0x7f80_0000 | (frac << (23 - f.frac_bits)));
    }
    let bias = (1i32 << (f.exp_bits - 1)) - 1;
    let (m, e) = if exp == 0 {
        (frac, 1 - bias)
    } else {
        (frac | (1 << f.frac_bits), exp as i32 - bias)
    };
    // m * 2^(e - frac_bits) is exact in float64 and representable in float32.
    let mag = f64::from(m) * 2f64.powi(e - f.frac_bits as i32);
    f32::from_bits(sign | (mag as f32).to_bits())
}

/// float32 → float16 bits, rounded to nearest-even.
pub fn f32_to_f16(x: f32) -> u16 {
    narrow(f64::from(x), F16)
}

/// float64 → float16 bits with one rounding (literals and float64 casts: never via float32).
pub fn f64_to_f16(x: f64) -> u16 {
    narrow(x, F16)
}

/// float16 bits → float32 (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    widen(h, F16)
}

/// float32 → bfloat16 bits, rounded to nearest-even.
pub fn f32_to_bf16(x: f32) -> u16 {
    narrow(f64::from(x), BF16)
}

/// float64 → bfloat16 bits with one rounding.
pub fn f64_to_bf16(x: f64) -> u16 {
    narrow(x, BF16)
}

/// The integer `v` (an int64 or uint64 value) → bfloat16 bits with one rounding: above 2^32
/// its bits below 2^13 collapse into one sticky bit at 2^13 first (they lie far below
/// bfloat16's rounding bit, so only whether they are zero matters), which leaves at most 51
/// significant bits, so that the float64 step is exact. The compiler emits the same collapse
/// before converting a 64-bit integer register (`FnBuilder::convert`).
pub fn int_to_bf16(v: i128) -> u16 {
    f64_to_bf16(int_to_f64_sticky(v))
}

/// `v` as float64 with its bits below 2^13 collapsed into a sticky bit when |v| ≥ 2^32
/// (exact for every int64 and uint64 value).
pub fn int_to_f64_sticky(v: i128) -> f64 {
    let m = v.unsigned_abs();
    let m = if m >= 1 << 32 {
        (m & !0x1FFF) | ((m & 0x1FFF) + 0x1FFF) & 0x2000
    } else {
        m
    };
    let f = m as f64;
    if v < 0 {
        -f
    } else {
        f
    }
}

/// bfloat16 bits → float32 (exact: the bits are the upper half of a binary32).
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float16_known_values() {
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f32_to_f16(-2.0), 0xc000);
        assert_eq!(f32_to_f16(65504.0), 0x7bff);
        assert_eq!(f32_to_f16(65520.0), 0x7c00); // halfway to the next binade rounds to inf
        assert_eq!(f32_to_f16(65519.0), 0x7bff);
        assert_eq!(f64_to_f16(0.1), 0x2e66);
        assert_eq!(f32_to_f16(5.960_464_5e-8), 0x0001); // smallest subnormal
        assert_eq!(f32_to_f16(2.980_232_2e-8), 0x0000); // exactly half of it: ties to even (0)
        assert_eq!(f32_to_f16(-0.0), 0x8000);
        assert_eq!(f32_to_f16(f32::NAN) & 0x7e00, 0x7e00);
        // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: even (1).
        assert_eq!(f64_to_f16(1.0 + 2f64.powi(-11)), 0x3c00);
        assert_eq!(f64_to_f16(1.0 + 3.0 * 2f64.powi(-11)), 0x3c02);
    }

    #[test]
    fn bfloat16_known_values() {
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        assert_eq!(f64_to_bf16(0.1), 0x3dcd);
        assert_eq!(f32_to_bf16(f32::MAX), 0x7f80);
        assert_eq!(bf16_to_f32(0x3f80), 1.0);
    }

    /// bfloat16 of integer `v` rounded once, exactly: 8 significant bits, nearest-even.
    fn bf16_exact(v: i128) -> u16 {
        let mut m = v.unsigned_abs();
        let e = 128 - m.leading_zeros() as i32 - 8;
        if e > 0 {
            let (q, r, half) = (m >> e, m & ((1 << e) - 1), 1u128 << (e - 1));
            m = (q + u128::from(r > half || r == half && q & 1 == 1)) << e;
        }
        let f = m as f32; // exact: at most 9 significant bits
        f32_to_bf16(if v < 0 { -f } else { f })
    }

    #[test]
    fn integers_round_once_to_bfloat16() {
        // 2^62 + 2^54 + 1 is just above a tie; through float64 it would be the tie itself.
        assert_eq!(int_to_bf16((1 << 62) + (1 << 54) + 1), 0x5E81);
        assert_eq!(f64_to_bf16(((1i64 << 62) + (1 << 54) + 1) as f64), 0x5E80);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..200_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Every magnitude, and the neighbourhoods of ties (few low bits set).
            let v = x >> (i % 64);
            let v = if i % 3 == 0 { v & !0xFFFF_FFFF | 1 } else { v };
            for w in [i128::from(v), i128::from(v as i64), -i128::from(v)] {
                assert_eq!(int_to_bf16(w), bf16_exact(w), "{w}");
            }
        }
    }

    #[test]
    fn widening_then_narrowing_is_the_identity() {
        for h in 0..=u16::MAX {
            let w = f16_to_f32(h);
            if w.is_nan() {
                assert!(f16_to_f32(f32_to_f16(w)).is_nan());
                continue;
            }
            assert_eq!(f32_to_f16(w), h, "float16 {h:#06x}");
            let b = bf16_to_f32(h);
            if !b.is_nan() {
                assert_eq!(f32_to_bf16(b), h, "bfloat16 {h:#06x}");
                assert_eq!(widen(h, BF16).to_bits(), b.to_bits());
            }
        }
    }

    #[test]
    fn bfloat16_rounding_matches_bit_arithmetic() {
        // Round-to-nearest-even on the float32 bits, the usual hand formula.
        for bits in (0..u32::MAX).step_by(65_521) {
            let x = f32::from_bits(bits);
            if x.is_nan() {
                continue;
            }
            let expect = ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16;
            assert_eq!(f32_to_bf16(x), expect, "{bits:#010x}");
        }
    }
}
