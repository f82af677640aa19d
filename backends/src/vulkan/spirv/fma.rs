//! `Math.fma` with one rounding (XPU §2.12) from unfused float64 arithmetic. Drivers may
//! evaluate GLSL `Fma` as a multiply and an add (lavapipe does, for float32 and float64), so
//! it is built from operations every driver rounds correctly, each `NoContraction`.
//!
//! The tool is *round to odd* (Boldo and Melquiond, "Emulation of FMA and correctly rounded
//! sums: proved algorithms using rounding to odd", IEEE TC 2008): a sum rounded to odd in a
//! format with at least two more digits than the target, then rounded to nearest, is the
//! exact sum rounded to nearest once. Round to odd comes from round to nearest plus the
//! TwoSum error: an inexact sum whose last mantissa bit is even moves one unit toward the
//! exact value.

use rspirv::spirv::{Decoration, GlslStd450Op as GLOp, Word};

use super::{be, FnCx, R};

impl FnCx<'_, '_> {
    /// `x op y` in float64 with `NoContraction` (so no driver fuses it into anything else).
    fn exact_op(&mut self, op: char, x: Word, y: Word) -> R<Word> {
        let d = self.cx.f64t();
        let b = self.b();
        let v = match op {
            '+' => b.f_add(d, None, x, y),
            '-' => b.f_sub(d, None, x, y),
            _ => b.f_mul(d, None, x, y),
        }
        .map_err(be)?;
        self.b().decorate(v, Decoration::NoContraction, []);
        Ok(v)
    }

    /// `(s, e)` with `s = x + y` rounded to nearest and `s + e == x + y` exactly (TwoSum).
    fn two_sum(&mut self, x: Word, y: Word) -> R<(Word, Word)> {
        let s = self.exact_op('+', x, y)?;
        let bb = self.exact_op('-', s, x)?;
        let sb = self.exact_op('-', s, bb)?;
        let ex = self.exact_op('-', x, sb)?;
        let ey = self.exact_op('-', y, bb)?;
        let e = self.exact_op('+', ex, ey)?;
        Ok((s, e))
    }

    /// `x + y` in float64 rounded to odd. Infinite or NaN sums are left as they are.
    fn add_round_to_odd(&mut self, x: Word, y: Word) -> R<Word> {
        let (d, u, tb) = (self.cx.f64t(), self.cx.u64t(), self.cx.t_bool);
        let (s, e) = self.two_sum(x, y)?;
        let zero = self.cx.konst(d, 0f64.to_bits());
        let inf = self.cx.konst(d, f64::INFINITY.to_bits());
        let (one, zero_u) = (self.cx.konst(u, 1), self.cx.konst(u, 0));
        let a = self.cx.glsl1(d, GLOp::FAbs, s)?;
        let b = self.b();
        let inexact = b.f_ord_not_equal(tb, None, e, zero).map_err(be)?;
        let finite = b.f_ord_less_than(tb, None, a, inf).map_err(be)?;
        let bits = b.bitcast(u, None, s).map_err(be)?;
        let low = b.bitwise_and(u, None, bits, one).map_err(be)?;
        let even = b.i_equal(tb, None, low, zero_u).map_err(be)?;
        // The exact sum lies beyond `s` (away from zero) when `e` has the sign of `s`.
        let e_pos = b.f_ord_greater_than(tb, None, e, zero).map_err(be)?;
        let s_pos = b.f_ord_greater_than(tb, None, s, zero).map_err(be)?;
        let away = b.logical_equal(tb, None, e_pos, s_pos).map_err(be)?;
        let up = b.i_add(u, None, bits, one).map_err(be)?;
        let down = b.i_sub(u, None, bits, one).map_err(be)?;
        let moved = b.select(u, None, away, up, down).map_err(be)?;
        let moved = b.bitcast(d, None, moved).map_err(be)?;
        let adjust = b.logical_and(tb, None, inexact, finite).map_err(be)?;
        let adjust = b.logical_and(tb, None, adjust, even).map_err(be)?;
        b.select(d, None, adjust, moved, s).map_err(be)
    }

    /// `fma(x, y, z)` of float32 operands, as float32: the float64 product is exact, the sum
    /// is rounded to odd in float64 (29 more digits), then to nearest float32.
    pub(super) fn fma_f32(&mut self, x: Word, y: Word, z: Word) -> R<Word> {
        let (f, d) = (self.cx.t_f32, self.cx.f64t());
        let mut w = [0; 3];
        for (k, v) in [x, y, z].into_iter().enumerate() {
            w[k] = self.b().f_convert(d, None, v).map_err(be)?;
        }
        let p = self.exact_op('*', w[0], w[1])?;
        let q = self.add_round_to_odd(p, w[2])?;
        self.b().f_convert(f, None, q).map_err(be)
    }

    /// `fma(x, y, z)` on float64 (Boldo and Melquiond's emulated FMA): the product exactly as
    /// `ph + pl` (Dekker's TwoProduct with Veltkamp's split), `th + tl = z + ph` (TwoSum),
    /// then `th + RO(tl + pl)` rounded to nearest. Where the split could overflow (an operand
    /// beyond 2^995), or the product or sum is not finite, the plain `x * y + z` gives the
    /// IEEE special values; a product in the subnormal range (below 2^-969) may be off by the
    /// bits the split loses there.
    pub(super) fn fma_f64(&mut self, x: Word, y: Word, z: Word) -> R<Word> {
        let (d, tb) = (self.cx.f64t(), self.cx.t_bool);
        let split = self.cx.konst(d, 134_217_729f64.to_bits()); // 2^27 + 1
        let limit = self.cx.konst(d, 2f64.powi(995).to_bits());
        let inf = self.cx.konst(d, f64::INFINITY.to_bits());
        let zero = self.cx.konst(d, 0f64.to_bits());
        let mut halves = [[0; 2]; 2];
        for (k, v) in [x, y].into_iter().enumerate() {
            let g = self.exact_op('*', split, v)?;
            let gv = self.exact_op('-', g, v)?;
            let hi = self.exact_op('-', g, gv)?;
            let lo = self.exact_op('-', v, hi)?;
            halves[k] = [hi, lo];
        }
        let [[xh, xl], [yh, yl]] = halves;
        let ph = self.exact_op('*', x, y)?;
        let hh = self.exact_op('*', xh, yh)?;
        let t = self.exact_op('-', hh, ph)?;
        let hl = self.exact_op('*', xh, yl)?;
        let t = self.exact_op('+', t, hl)?;
        let lh = self.exact_op('*', xl, yh)?;
        let t = self.exact_op('+', t, lh)?;
        let ll = self.exact_op('*', xl, yl)?;
        let pl = self.exact_op('+', t, ll)?;
        let (th, tl) = self.two_sum(z, ph)?;
        let v = self.add_round_to_odd(tl, pl)?;
        let sum = self.exact_op('+', th, v)?;
        // `v == 0`: `z + ph` was exact and is the result, with the sign IEEE gives its zero.
        let v_zero = self.b().f_ord_equal(tb, None, v, zero).map_err(be)?;
        let fused = self.b().select(d, None, v_zero, th, sum).map_err(be)?;
        let plain = self.exact_op('+', ph, z)?;
        let ax = self.cx.glsl1(d, GLOp::FAbs, x)?;
        let ay = self.cx.glsl1(d, GLOp::FAbs, y)?;
        let ath = self.cx.glsl1(d, GLOp::FAbs, th)?;
        let b = self.b();
        let x_ok = b.f_ord_less_than(tb, None, ax, limit).map_err(be)?;
        let y_ok = b.f_ord_less_than(tb, None, ay, limit).map_err(be)?;
        let th_ok = b.f_ord_less_than(tb, None, ath, inf).map_err(be)?;
        let ok = b.logical_and(tb, None, x_ok, y_ok).map_err(be)?;
        let ok = b.logical_and(tb, None, ok, th_ok).map_err(be)?;
        b.select(d, None, ok, fused, plain).map_err(be)
    }
}
