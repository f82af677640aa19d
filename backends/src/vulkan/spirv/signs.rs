//! Signs and NaNs the driver's GLSL functions get wrong (lavapipe): XPU §2.12 wants IEEE
//! signs of zero results and NaN in, NaN out. Each fix is a bit operation or a select around
//! the driver's value, so it costs a few instructions and changes no other result.

use rspirv::spirv::Word;

use super::{be, FnCx, R};

impl FnCx<'_, '_> {
    /// `v`, the `trunc` or `round` of `x` (float type `t`, `f64` when `wide`), with the sign of
    /// `x`: a zero result keeps it (XPU §2.12: `Math.round(-0.4)` is `-0.0`), and a nonzero
    /// one already has it.
    pub(super) fn with_sign_of(&mut self, wide: bool, t: Word, x: Word, v: Word) -> R<Word> {
        let (it, sign) = if wide {
            let u = self.cx.u64t();
            (u, self.cx.konst(u, 1 << 63))
        } else {
            (self.cx.t_u32, self.cx.k32(0x8000_0000))
        };
        let b = self.b();
        let xb = b.bitcast(it, None, x).map_err(be)?;
        let vb = b.bitcast(it, None, v).map_err(be)?;
        let sb = b.bitwise_and(it, None, xb, sign).map_err(be)?;
        let r = b.bitwise_or(it, None, vb, sb).map_err(be)?;
        b.bitcast(t, None, r).map_err(be)
    }

    /// `v = f(x)` for a float32 `f` whose result has the sign of `x` (`atan`, `asin`): that
    /// sign forced (lavapipe's `atan(-0.0)` is +0), and a NaN `x` returned as it is
    /// (lavapipe's `atan(NaN)` is 0).
    pub(super) fn odd_f32(&mut self, x: Word, v: Word) -> R<Word> {
        let (f, tb) = (self.cx.t_f32, self.cx.t_bool);
        let a = self.cx.glsl1(f, rspirv::spirv::GlslStd450Op::FAbs, v)?;
        let signed = self.with_sign_of(false, f, x, a)?;
        let nan = self.b().is_nan(tb, None, x).map_err(be)?;
        self.b().select(f, None, nan, x, signed).map_err(be)
    }

    /// `v = atan2(y, x)` on float32 with the sign of `y` (always the sign of atan2's result:
    /// lavapipe gives `atan2(-0.0, 2)` = +0) and NaN when either operand is.
    pub(super) fn atan2_signs(&mut self, y: Word, x: Word, v: Word) -> R<Word> {
        let (f, tb) = (self.cx.t_f32, self.cx.t_bool);
        let signed = self.odd_f32(y, v)?;
        let nan = self.b().is_nan(tb, None, x).map_err(be)?;
        let either = self.b().f_add(f, None, y, x).map_err(be)?;
        self.b().select(f, None, nan, either, signed).map_err(be)
    }

    /// `v = f(x)` for a float32 `f` with `f(±0) = ±0` whose sign otherwise varies (`sin`,
    /// `tan`): a zero or NaN `x` is returned as it is.
    pub(super) fn zero_fixed_f32(&mut self, x: Word, v: Word) -> R<Word> {
        let (f, tb) = (self.cx.t_f32, self.cx.t_bool);
        let zero = self.cx.konst(f, 0);
        let b = self.b();
        let z = b.f_ord_equal(tb, None, x, zero).map_err(be)?;
        let nan = b.is_nan(tb, None, x).map_err(be)?;
        let keep = b.logical_or(tb, None, z, nan).map_err(be)?;
        b.select(f, None, keep, x, v).map_err(be)
    }
}
