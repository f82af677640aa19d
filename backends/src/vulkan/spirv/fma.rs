//! `Math.fma` with one rounding (XPU §2.12) from unfused float64 arithmetic. Drivers may
//! evaluate GLSL `Fma` as a multiply and an add (lavapipe does, for float32 and float64), so
//! it is built from operations every driver rounds correctly, each `NoContraction`: float32
//! here, float64 as the devmath recipe (`devmath/fma.rs`, the same tool on scaled operands).
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

    /// `fma(x, y, z)` on float64: the devmath recipe (`devmath/fma.rs`), the same emulated
    /// FMA on operands scaled so that nothing in it overflows or underflows.
    pub(super) fn fma_f64(&mut self, x: Word, y: Word, z: Word) -> R<Word> {
        self.recipe(&crate::devmath::Recipe::fma(), &[x, y, z])
    }
}
