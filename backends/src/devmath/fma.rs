//! float64 `Math.fma(x, y, z)` rounded once (XPU §2.12), from unfused float64 and int64
//! steps, for targets whose fused multiply-add may be a multiply and an add (lavapipe's GLSL
//! `Fma`).
//!
//! The core is Boldo and Melquiond's emulated FMA ("Emulation of FMA and correctly rounded
//! sums: proved algorithms using rounding to odd", IEEE TC 2008): the product exactly as
//! `ph + pl` (Dekker), `th + tl = z + ph` (TwoSum), then `th + RO(tl + pl)` rounded to
//! nearest, where RO rounds to odd. It is exact only where nothing overflows or underflows,
//! so it runs on scaled operands: `x` and `y` with their exponents taken out (mantissas in
//! [1, 2)), `z` scaled by the same power of two `2^-e` — replaced by a sticky `±2^-200` when
//! it lies that far below the product, and the result itself when it lies so far above it
//! that the product cannot move it. The scaled result is scaled back by `2^e`: in steps that
//! cannot round when the result is normal (or overflows, to the infinity IEEE gives), and,
//! for a subnormal result, from the scaled sum rounded to odd, whose extra bits make the one
//! rounding of the scaling the correct one — but in [2^-1023, 2^-1022), whose 52 bits leave
//! only one: there from the sum rounded to nearest, stepped toward the exact sum when it lies
//! halfway on the coarser grid.
//!
//! Zeros, infinities and NaNs of `x` or `y` take `x · y + z` (the product is then exact); a
//! non-finite `z` is the result; a zero `z` gives `x · y`, whose one rounding is the result's
//! and whose sign is the exact product's.

use super::{two_product_var, two_sum, Builder, Step};

/// The exponent field of a float64.
const EXP_MASK: i64 = 0x7ff << 52;

/// Builds `fma(x, y, z)`; returns the result's step.
pub(super) fn fma(b: &mut Builder, x: usize, y: usize, z: usize) -> usize {
    let product = b.mul(x, y);
    let plain = b.add(product, z);
    let x_ok = finite_nonzero(b, x);
    let y_ok = finite_nonzero(b, y);
    let z_finite = finite(b, z);
    let zero = b.f(0.0);
    let z_zero = b.push(Step::FEq(z, zero));

    let (mx, ex) = normalise(b, x);
    let (my, ey) = normalise(b, y);
    let (mz, ez) = normalise(b, z);
    let e = b.push(Step::IAdd(ex, ey));
    // z = mz · 2^d · 2^e.
    let d = b.push(Step::ISub(ez, e));
    let dc = clamp_i(b, d, -200, 60);
    let zs = with_exponent(b, mz, dc);
    let lo = b.i(-200);
    let far_below = b.push(Step::ILt(d, lo));
    let z_bits = b.push(Step::Bits(z));
    let sign = b.i(i64::MIN);
    let z_sign = b.push(Step::IAnd(z_bits, sign));
    let tiny = b.i((1023 - 200) << 52);
    let tiny = b.push(Step::IOr(z_sign, tiny));
    let tiny = b.push(Step::FromBits(tiny));
    let zs = b.select(far_below, tiny, zs);
    let hi = b.i(60);
    let far_above = b.push(Step::ILt(hi, d));

    // The emulated FMA on the scaled operands, rounded to nearest and to odd.
    let (ph, pl) = two_product_var(b, mx, my);
    let (th, tl) = two_sum(b, zs, ph);
    let (v, v_side) = add_round_to_odd(b, tl, pl);
    let (sum, err) = two_sum(b, th, v);
    // `v == 0`: `zs + ph` was exact and is the result, with the sign IEEE gives its zero.
    let v_zero = b.push(Step::FEq(v, zero));
    let near = b.select(v_zero, th, sum);
    let (odd, _) = add_round_to_odd(b, th, v);
    // Which side of `near` the exact sum lies on: `err` when nonzero (a multiple of `v`'s
    // ulp, so larger than what rounding `v` to odd dropped), else that dropped part's side.
    let err_side = sign_of(b, err);
    let err_zero = b.push(Step::FEq(err, zero));
    let side = b.select(err_zero, v_side, err_side);

    // Scaled back: is the result below 2^-1022, or in [2^-1023, 2^-1022)?
    let near_bits = b.push(Step::Bits(near));
    let near_exp = exponent(b, near_bits);
    let result_exp = b.push(Step::IAdd(near_exp, e));
    let min_normal = b.i(-1022);
    let subnormal = b.push(Step::ILt(result_exp, min_normal));
    let top = b.i(-1023);
    let top_binade = b.push(Step::IEq(result_exp, top));
    let normal = scale_exact(b, near, e);
    // A subnormal result keeps at most 51 bits below 2^-1023: rounding the odd sum there is
    // the one correct rounding. In [2^-1023, 2^-1022) it keeps 52, one fewer than `near`:
    // `near` rounds correctly unless it lies halfway on the 52-bit grid, where the exact
    // sum's side decides (a step of one unit toward it, onto the grid).
    let none = b.i(0);
    let inexact = b.push(Step::IEq(side, none));
    let inexact = b.push(Step::Not(inexact));
    let one = b.i(1);
    let last = b.push(Step::IAnd(near_bits, one));
    let halfway = b.push(Step::IEq(last, one));
    let nudge = b.push(Step::And(inexact, halfway));
    let near_pos = b.push(Step::FLt(zero, near));
    let side_pos = b.push(Step::ILt(none, side));
    let stepped = one_unit(b, near_bits, near_pos, side_pos);
    let on_grid = b.select(nudge, stepped, near);
    let t = b.select(top_binade, on_grid, odd);
    let small = scale_subnormal(b, t, e);
    let r = b.select(subnormal, small, normal);

    let r = b.select(far_above, z, r);
    let r = b.select(z_zero, product, r);
    let r = b.select(z_finite, r, z);
    let xy_ok = b.push(Step::And(x_ok, y_ok));
    b.select(xy_ok, r, plain)
}

/// Whether `v` is finite (not infinite, not NaN).
fn finite(b: &mut Builder, v: usize) -> usize {
    let bits = b.push(Step::Bits(v));
    let mask = b.i(EXP_MASK);
    let field = b.push(Step::IAnd(bits, mask));
    let all = b.push(Step::IEq(field, mask));
    b.push(Step::Not(all))
}

/// Whether `v` is finite and not ±0.
fn finite_nonzero(b: &mut Builder, v: usize) -> usize {
    let f = finite(b, v);
    let zero = b.f(0.0);
    let is_zero = b.push(Step::FEq(v, zero));
    let nonzero = b.push(Step::Not(is_zero));
    b.push(Step::And(f, nonzero))
}

/// `(m, e)` with `v = m · 2^e`, `|m|` in [1, 2) and the sign of `v`, for a finite nonzero
/// `v` (a subnormal is lifted by 2^64 first, exactly).
fn normalise(b: &mut Builder, v: usize) -> (usize, usize) {
    let bits = b.push(Step::Bits(v));
    let mask = b.i(EXP_MASK);
    let field = b.push(Step::IAnd(bits, mask));
    let none = b.i(0);
    let sub = b.push(Step::IEq(field, none));
    let lifted = b.mulc(v, 2f64.powi(64));
    let w = b.select(sub, lifted, v);
    let w_bits = b.push(Step::Bits(w));
    let e = exponent(b, w_bits);
    let sixty_four = b.i(64);
    let e_sub = b.push(Step::ISub(e, sixty_four));
    let e = b.select(sub, e_sub, e);
    let keep = b.i(!EXP_MASK);
    let rest = b.push(Step::IAnd(w_bits, keep));
    let one = b.i(1023 << 52);
    let m = b.push(Step::IOr(rest, one));
    let m = b.push(Step::FromBits(m));
    (m, e)
}

/// The unbiased exponent of the normal float64 with `bits` (int64).
fn exponent(b: &mut Builder, bits: usize) -> usize {
    let field = b.push(Step::UShr(bits, 52));
    let low11 = b.i(0x7ff);
    let field = b.push(Step::IAnd(field, low11));
    let bias = b.i(1023);
    b.push(Step::ISub(field, bias))
}

/// int64 `v` limited to `[lo, hi]`.
fn clamp_i(b: &mut Builder, v: usize, lo: i64, hi: i64) -> usize {
    let (l, h) = (b.i(lo), b.i(hi));
    let below = b.push(Step::ILt(v, l));
    let v = b.select(below, l, v);
    let above = b.push(Step::ILt(h, v));
    b.select(above, h, v)
}

/// `m · 2^k` for `|m|` in [1, 2) and `k` in [−1022, 1023]: the exponent field replaced.
fn with_exponent(b: &mut Builder, m: usize, k: usize) -> usize {
    let bits = b.push(Step::Bits(m));
    let keep = b.i(!EXP_MASK);
    let rest = b.push(Step::IAnd(bits, keep));
    let bias = b.i(1023);
    let field = b.push(Step::IAdd(k, bias));
    let field = b.push(Step::Shl(field, 52));
    let v = b.push(Step::IOr(rest, field));
    b.push(Step::FromBits(v))
}

/// `2^k` for `k` in [−1022, 1023].
fn power_of_two(b: &mut Builder, k: usize) -> usize {
    let bias = b.i(1023);
    let field = b.push(Step::IAdd(k, bias));
    let field = b.push(Step::Shl(field, 52));
    b.push(Step::FromBits(field))
}

/// `t · 2^k` (int64 `k`, |k| < 3000) by three factors of at most 2^±1000, each of `k`'s
/// sign: the partial products lie between `t` and the result, so none rounds when the
/// result is normal, and one overflows to the infinity IEEE gives when it is not.
fn scale_exact(b: &mut Builder, t: usize, k: usize) -> usize {
    let mut rest = k;
    let mut v = t;
    for _ in 0..3 {
        let part = clamp_i(b, rest, -1000, 1000);
        let f = power_of_two(b, part);
        v = b.mul(v, f);
        rest = b.push(Step::ISub(rest, part));
    }
    v
}

/// `t · 2^k` rounded once, for a result below 2^-1022: `t · 2^(k + 1000)` exactly (normal
/// unless the result is far below the smallest subnormal, where it rounds to zero either
/// way), then `· 2^-1000`, the one rounding.
fn scale_subnormal(b: &mut Builder, t: usize, k: usize) -> usize {
    let thousand = b.i(1000);
    let lifted = b.push(Step::IAdd(k, thousand));
    let v = scale_exact(b, t, lifted);
    b.mulc(v, 2f64.powi(-1000))
}

/// `x + y` rounded to odd — to nearest, then, when inexact with an even last bit, one unit
/// toward the exact sum (the TwoSum error's side) — and the side of the result the exact
/// sum lies on (int64 −1, 0 or 1). Infinite or NaN sums stay as they are.
fn add_round_to_odd(b: &mut Builder, x: usize, y: usize) -> (usize, usize) {
    let (s, e) = two_sum(b, x, y);
    let zero = b.f(0.0);
    let exact = b.push(Step::FEq(e, zero));
    let inexact = b.push(Step::Not(exact));
    let fin = finite(b, s);
    let bits = b.push(Step::Bits(s));
    let one = b.i(1);
    let low = b.push(Step::IAnd(bits, one));
    let none = b.i(0);
    let even = b.push(Step::IEq(low, none));
    // One unit toward the exact sum: upward when the TwoSum error is positive.
    let e_pos = b.push(Step::FLt(zero, e));
    let s_pos = b.push(Step::FLt(zero, s));
    let moved = one_unit(b, bits, s_pos, e_pos);
    let adjust = b.push(Step::And(inexact, fin));
    let adjust = b.push(Step::And(adjust, even));
    let r = b.select(adjust, moved, s);
    // Moved one unit toward the exact sum, the result passed it: the side flips.
    let side = sign_of(b, e);
    let flipped = b.push(Step::ISub(none, side));
    let side = b.select(adjust, flipped, side);
    (r, side)
}

/// The float64 one unit in the last place from the one with `bits` (positive when `v_pos`),
/// upward when `up` holds, else downward: a step away from zero when the two agree.
fn one_unit(b: &mut Builder, bits: usize, v_pos: usize, up: usize) -> usize {
    let both = b.push(Step::And(v_pos, up));
    let v_neg = b.push(Step::Not(v_pos));
    let down = b.push(Step::Not(up));
    let neither = b.push(Step::And(v_neg, down));
    let away = b.push(Step::Or(both, neither));
    let one = b.i(1);
    let larger = b.push(Step::IAdd(bits, one));
    let smaller = b.push(Step::ISub(bits, one));
    let moved = b.select(away, larger, smaller);
    b.push(Step::FromBits(moved))
}

/// The sign of float64 `v` as int64 −1, 0 or 1 (0 for ±0 and NaN).
fn sign_of(b: &mut Builder, v: usize) -> usize {
    let zero = b.f(0.0);
    let pos = b.push(Step::FLt(zero, v));
    let neg = b.push(Step::FLt(v, zero));
    let (one, minus, none) = (b.i(1), b.i(-1), b.i(0));
    let n = b.select(neg, minus, none);
    b.select(pos, one, n)
}

#[cfg(test)]
mod tests {
    use super::super::Recipe;

    /// xorshift64*: reproducible operands.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        /// A finite float64 whose exponent field is within `spread` of `centre`.
        fn float(&mut self, centre: i64, spread: i64) -> f64 {
            let r = self.next();
            let exp = (centre + (r >> 40) as i64 % (2 * spread + 1) - spread).clamp(0, 2046);
            let bits = (r & (1 << 63)) | ((exp as u64) << 52) | (self.next() >> 12);
            f64::from_bits(bits)
        }
    }

    fn same(a: f64, b: f64) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    fn check(r: &Recipe, x: f64, y: f64, z: f64, bad: &mut Vec<(f64, f64, f64)>) {
        if !same(r.eval3(x, y, z), x.mul_add(y, z)) && bad.len() < 20 {
            bad.push((x, y, z));
        }
    }

    /// Against the host's fused multiply-add, bit for bit: operands of every magnitude, sums
    /// that cancel, `z` far above and below the product, products and results near overflow
    /// and in the subnormal range, ties between subnormals, and the special values.
    #[test]
    fn fma_rounds_once_everywhere() {
        let r = Recipe::fma();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut bad = vec![];
        let specials = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            f64::MIN_POSITIVE,
            5e-324,
            -5e-324,
            f64::MAX,
            f64::MIN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1.0 + f64::EPSILON,
            0.5,
            3.0,
        ];
        for &x in &specials {
            for &y in &specials {
                for &z in &specials {
                    check(&r, x, y, z, &mut bad);
                }
            }
        }
        for _ in 0..200_000 {
            // Anywhere.
            let (x, y, z) = (
                rng.float(1023, 1023),
                rng.float(1023, 1023),
                rng.float(1023, 1023),
            );
            check(&r, x, y, z, &mut bad);
            // z cancelling most of the product (at any scale).
            let ex = (rng.next() % 2000) as i64 + 24;
            let (x, y) = (rng.float(ex / 2, 3), rng.float(ex - ex / 2, 3));
            let p = x * y;
            let z = -p * (1.0 + (rng.next() % 64) as f64 * f64::EPSILON);
            check(&r, x, y, z, &mut bad);
            check(&r, x, y, -p, &mut bad);
            // Near overflow, and results in and near the subnormal range.
            let (x, y) = (rng.float(1023 + 511, 2), rng.float(1023 + 512, 2));
            check(&r, x, y, rng.float(2046, 2), &mut bad);
            check(&r, x, y, -(x * y), &mut bad);
            let (x, y) = (rng.float(1023 - 537, 30), rng.float(1023 - 537, 30));
            check(&r, x, y, rng.float(30, 30), &mut bad);
            check(&r, x, y, -(x * y) * 0.75, &mut bad);
            // Products exactly halfway between subnormals, z as the sticky bit.
            let half = f64::from_bits((rng.next() % (1 << 52)) | 1);
            check(
                &r,
                half,
                0.5,
                5e-324 * ((rng.next() % 3) as f64 - 1.0),
                &mut bad,
            );
            check(&r, half, 0.5 + f64::EPSILON / 4.0, 0.0, &mut bad);
        }
        assert!(bad.is_empty(), "fma(x, y, z) wrong for {bad:?}");
    }
}
