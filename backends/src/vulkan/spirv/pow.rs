//! `Math.pow` on float32 (XPU §2.12: C's `pow`). GLSL `Pow` is undefined for a negative base
//! and for `0^y` with `y <= 0`, so the driver computes only `|x|^y`; every special case of C
//! is chosen around it with `OpSelect`.

use rspirv::spirv::{GlslStd450Op as GLOp, Word};

use super::{be, Cx, FnCx, R};

impl FnCx<'_, '_> {
    /// `Math.pow` on float32 with C's special cases (XPU §2.12). GLSL `Pow` is undefined for a
    /// negative base and for `0^y` with `y <= 0` (lavapipe gives NaN for `(-2)^3`, 0 for
    /// `0^-1`, -0 for `NaN^1`), so it computes only `|x|^y` for finite nonzero `|x|` and finite
    /// `y`; the rest follows C: zero and infinite bases and exponents, the sign for an odd
    /// integer `y` (also of `-0` and `-inf`), NaN for a finite `x < 0` with a non-integer
    /// `y` and for NaN operands, and 1 for `pow(x, ±0)`, `pow(1, y)`, `pow(-1, ±inf)`.
    pub(super) fn pow_f32(&mut self, x: Word, y: Word) -> R<Word> {
        let (f, u, tb) = (self.cx.t_f32, self.cx.t_u32, self.cx.t_bool);
        let k = |cx: &mut Cx, v: f32| cx.konst(f, u64::from(v.to_bits()));
        let (one, half, zero) = (k(self.cx, 1.0), k(self.cx, 0.5), k(self.cx, 0.0));
        let (inf, ninf, nan) = (
            k(self.cx, f32::INFINITY),
            k(self.cx, f32::NEG_INFINITY),
            k(self.cx, f32::NAN),
        );
        let ksign = self.cx.k32(0x8000_0000);
        let ax = self.cx.glsl1(f, GLOp::FAbs, x)?;
        let r = self.cx.glsl2(f, GLOp::Pow, ax, y)?;
        let ty = self.cx.glsl1(f, GLOp::Trunc, y)?;
        let hy = self.b().f_mul(f, None, y, half).map_err(be)?;
        let thy = self.cx.glsl1(f, GLOp::Trunc, hy)?;
        let b = self.b();
        // The magnitude where C's pow gives 0 or inf.
        let y_pos = b.f_ord_greater_than(tb, None, y, zero).map_err(be)?;
        let y_inf = b.is_inf(tb, None, y).map_err(be)?;
        let ax_zero = b.f_ord_equal(tb, None, ax, zero).map_err(be)?;
        let ax_inf = b.is_inf(tb, None, ax).map_err(be)?;
        let ax_big = b.f_ord_greater_than(tb, None, ax, one).map_err(be)?;
        let edge_base = b.logical_or(tb, None, ax_zero, ax_inf).map_err(be)?;
        let base_big = b.logical_equal(tb, None, ax_inf, y_pos).map_err(be)?;
        let exp_big = b.logical_equal(tb, None, ax_big, y_pos).map_err(be)?;
        let big = b
            .select(tb, None, edge_base, base_big, exp_big)
            .map_err(be)?;
        let edge = b.logical_or(tb, None, edge_base, y_inf).map_err(be)?;
        let limit = b.select(f, None, big, inf, zero).map_err(be)?;
        let r = b.select(f, None, edge, limit, r).map_err(be)?;
        // x's sign for an odd integer y.
        let integral = b.f_ord_equal(tb, None, ty, y).map_err(be)?;
        let even = b.f_ord_equal(tb, None, thy, hy).map_err(be)?;
        let odd = b.logical_not(tb, None, even).map_err(be)?;
        let odd = b.logical_and(tb, None, integral, odd).map_err(be)?;
        let xb = b.bitcast(u, None, x).map_err(be)?;
        let sign = b.bitwise_and(u, None, xb, ksign).map_err(be)?;
        let rb = b.bitcast(u, None, r).map_err(be)?;
        let neg = b.bitwise_or(u, None, rb, sign).map_err(be)?;
        let neg = b.bitcast(f, None, neg).map_err(be)?;
        let r = b.select(f, None, odd, neg, r).map_err(be)?;
        // NaN.
        let below = b.f_ord_less_than(tb, None, x, zero).map_err(be)?;
        let finite = b.f_ord_not_equal(tb, None, x, ninf).map_err(be)?;
        let fraction = b.logical_not(tb, None, integral).map_err(be)?;
        let bad = b.logical_and(tb, None, below, finite).map_err(be)?;
        let bad = b.logical_and(tb, None, bad, fraction).map_err(be)?;
        let x_nan = b.is_nan(tb, None, x).map_err(be)?;
        let y_nan = b.is_nan(tb, None, y).map_err(be)?;
        let bad = b.logical_or(tb, None, bad, x_nan).map_err(be)?;
        let bad = b.logical_or(tb, None, bad, y_nan).map_err(be)?;
        let r = b.select(f, None, bad, nan, r).map_err(be)?;
        // 1.
        let x_one = b.f_ord_equal(tb, None, x, one).map_err(be)?;
        let ax_one = b.f_ord_equal(tb, None, ax, one).map_err(be)?;
        let m_one = b.logical_and(tb, None, ax_one, y_inf).map_err(be)?;
        let y_zero = b.f_ord_equal(tb, None, y, zero).map_err(be)?;
        let is_one = b.logical_or(tb, None, x_one, m_one).map_err(be)?;
        let is_one = b.logical_or(tb, None, is_one, y_zero).map_err(be)?;
        b.select(f, None, is_one, one, r).map_err(be)
    }
}
