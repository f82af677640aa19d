//! Exact float remainder (`%` on float32 and float64, LANGUAGE §4: C's `fmod`).
//!
//! `OpFRem` is not exact on every driver: lavapipe computes it through a division and loses
//! the low bits (`300.7f % 0.1f` gave 0). This is musl's integer algorithm, as the PTX
//! emitter's `fmod64`: both significands aligned as integers, then one shifted subtraction
//! per step of the exponent difference — each step is exact, so the result is. The special
//! cases (NaN, infinite `x`, zero `y`, `|x| <= |y|`) are chosen by `OpSelect` after the loop,
//! whose trip count they set to zero.

use rspirv::spirv::{GlslStd450Op as GLOp, LoopControl, Word};

use super::{be, FnCx, R};
use cajeta_bytecode::Scalar;

/// The bit layout of one float format.
struct Layout {
    /// Bits of the word (32 or 64).
    bits: u32,
    /// Bits of the stored significand (23 or 52).
    man: u32,
    /// The all-ones exponent (255 or 2047).
    exp_max: u64,
}

const F32: Layout = Layout {
    bits: 32,
    man: 23,
    exp_max: 0xff,
};
const F64: Layout = Layout {
    bits: 64,
    man: 52,
    exp_max: 0x7ff,
};

impl FnCx<'_, '_> {
    /// `fmod(x, y)` of two float32 (`s == F32`) or float64 values, exactly.
    pub(super) fn fmod(&mut self, s: Scalar, x: Word, y: Word) -> R<Word> {
        let l = if s == Scalar::F64 { &F64 } else { &F32 };
        let ft = self.cx.reg_ty(s);
        // The word type; exponents and shift counts are `uint32` (compared as signed).
        let w = if s == Scalar::F64 {
            self.cx.u64t()
        } else {
            self.cx.t_u32
        };
        let (u, tb) = (self.cx.t_u32, self.cx.t_bool);
        let kw = |f: &mut Self, v: u64| f.cx.konst(w, v);

        let ux = self.b().bitcast(w, None, x).map_err(be)?;
        let uy = self.b().bitcast(w, None, y).map_err(be)?;
        let sign = kw(self, 1 << (l.bits - 1));
        let sx = self.b().bitwise_and(w, None, ux, sign).map_err(be)?;
        let one = kw(self, 1);
        let ax = self.b().shift_left_logical(w, None, ux, one).map_err(be)?;
        let ay = self.b().shift_left_logical(w, None, uy, one).map_err(be)?;

        // y == 0, y NaN or x not finite: NaN.
        let zero = kw(self, 0);
        let y_zero = self.b().i_equal(tb, None, ay, zero).map_err(be)?;
        let inf2 = kw(self, l.exp_max << (l.man + 1));
        let y_nan = self.b().u_greater_than(tb, None, ay, inf2).map_err(be)?;
        let x_inf = self
            .b()
            .u_greater_than_equal(tb, None, ax, inf2)
            .map_err(be)?;
        let nan = self.b().logical_or(tb, None, y_zero, y_nan).map_err(be)?;
        let nan = self.b().logical_or(tb, None, nan, x_inf).map_err(be)?;
        // |x| < |y|: x; |x| == |y|: a zero of x's sign.
        let less = self.b().u_less_than(tb, None, ax, ay).map_err(be)?;
        let equal = self.b().i_equal(tb, None, ax, ay).map_err(be)?;
        let special = self.b().logical_or(tb, None, nan, less).map_err(be)?;
        let special = self.b().logical_or(tb, None, special, equal).map_err(be)?;

        let (mx, ex) = self.significand(l, w, ux)?;
        let (my, ey) = self.significand(l, w, uy)?;
        // A special case runs no step.
        let ex = self.b().select(u, None, special, ey, ex).map_err(be)?;

        // One step per exponent above y's: subtract y's significand where it fits, shift.
        let [pre, head, body, cont, merge] = [0; 5].map(|_| self.b().id());
        let (ex_next, mx_next) = (self.b().id(), self.b().id());
        self.b().branch(pre).map_err(be)?;
        self.b().begin_block(Some(pre)).map_err(be)?;
        self.b().branch(head).map_err(be)?;
        self.b().begin_block(Some(head)).map_err(be)?;
        let e = self
            .b()
            .phi(u, None, [(ex, pre), (ex_next, cont)])
            .map_err(be)?;
        let m = self
            .b()
            .phi(w, None, [(mx, pre), (mx_next, cont)])
            .map_err(be)?;
        let more = self.b().s_greater_than(tb, None, e, ey).map_err(be)?;
        self.b()
            .loop_merge(merge, cont, LoopControl::NONE, [])
            .map_err(be)?;
        self.b()
            .branch_conditional(more, body, merge, [])
            .map_err(be)?;
        self.b().begin_block(Some(body)).map_err(be)?;
        let m1 = self.subtract_fitting(w, m, my)?;
        self.b()
            .shift_left_logical(w, Some(mx_next), m1, one)
            .map_err(be)?;
        let k1 = self.cx.k32(1);
        self.b().i_sub(u, Some(ex_next), e, k1).map_err(be)?;
        self.b().branch(cont).map_err(be)?;
        self.b().begin_block(Some(cont)).map_err(be)?;
        self.b().branch(head).map_err(be)?;
        self.b().begin_block(Some(merge)).map_err(be)?;

        // The last subtraction (at equal exponents), then the leading one back in place.
        let m = self.subtract_fitting(w, m, my)?;
        let r_zero = self.b().i_equal(tb, None, m, zero).map_err(be)?;
        let msb = self.msb(w, m)?;
        let kman = self.cx.k32(l.man);
        let sh = self.b().i_sub(u, None, kman, msb).map_err(be)?;
        let shw = self.widen(w, sh)?;
        let m = self.b().shift_left_logical(w, None, m, shw).map_err(be)?;
        let e = self.b().i_sub(u, None, e, sh).map_err(be)?;
        // Normal: the exponent field replaces the implicit one.
        let implicit = kw(self, 1 << l.man);
        let frac = self.b().i_sub(w, None, m, implicit).map_err(be)?;
        let ew = self.widen(w, e)?;
        let kmanw = kw(self, u64::from(l.man));
        let field = self
            .b()
            .shift_left_logical(w, None, ew, kmanw)
            .map_err(be)?;
        let normal = self.b().bitwise_or(w, None, frac, field).map_err(be)?;
        // Subnormal: shift right by 1 - e (clamped: out-of-range counts only arise on paths
        // whose result is not chosen, but must not be undefined).
        let k0 = self.cx.k32(0);
        let is_normal = self.b().s_greater_than(tb, None, e, k0).map_err(be)?;
        let down = self.b().i_sub(u, None, k1, e).map_err(be)?;
        let kmax = self.cx.k32(l.bits - 1);
        let down = self.cx.glsl2(u, GLOp::UMin, down, kmax)?;
        let downw = self.widen(w, down)?;
        let sub = self
            .b()
            .shift_right_logical(w, None, m, downw)
            .map_err(be)?;
        let r = self
            .b()
            .select(w, None, is_normal, normal, sub)
            .map_err(be)?;
        let r = self.b().bitwise_or(w, None, r, sx).map_err(be)?;

        let to_zero = self.b().logical_or(tb, None, equal, r_zero).map_err(be)?;
        let r = self.b().select(w, None, to_zero, sx, r).map_err(be)?;
        let r = self.b().select(w, None, less, ux, r).map_err(be)?;
        // NaN as C's fmod makes it, `(x * y) / (x * y)`: the device's own NaN (the host's,
        // bit for bit, on a CPU device), with a NaN operand's payload.
        let p = self.b().f_mul(ft, None, x, y).map_err(be)?;
        let q = self.b().f_div(ft, None, p, p).map_err(be)?;
        let q = self.b().bitcast(w, None, q).map_err(be)?;
        let r = self.b().select(w, None, nan, q, r).map_err(be)?;
        self.b().bitcast(ft, None, r).map_err(be)
    }

    /// The significand of float bits `v` as an integer with its leading one at bit `man`,
    /// and the exponent that goes with it (a subnormal's is below 1).
    fn significand(&mut self, l: &Layout, w: Word, v: Word) -> R<(Word, Word)> {
        let (u, tb) = (self.cx.t_u32, self.cx.t_bool);
        let kman = self.cx.konst(w, u64::from(l.man));
        let e = self.b().shift_right_logical(w, None, v, kman).map_err(be)?;
        let e = self.narrow(w, e)?;
        let kexp = self.cx.k32(l.exp_max as u32);
        let e = self.b().bitwise_and(u, None, e, kexp).map_err(be)?;
        let fmask = self.cx.konst(w, (1 << l.man) - 1);
        let f = self.b().bitwise_and(w, None, v, fmask).map_err(be)?;
        let implicit = self.cx.konst(w, 1 << l.man);
        let normal = self.b().bitwise_or(w, None, f, implicit).map_err(be)?;
        // Subnormal: shift the leading one up to bit `man`; the exponent is 1 - shift.
        let msb = self.msb(w, f)?;
        let kman32 = self.cx.k32(l.man);
        let sh = self.b().i_sub(u, None, kman32, msb).map_err(be)?;
        let kmax = self.cx.k32(l.man + 1);
        let sh = self.cx.glsl2(u, GLOp::UMin, sh, kmax)?;
        let shw = self.widen(w, sh)?;
        let sub = self.b().shift_left_logical(w, None, f, shw).map_err(be)?;
        let k1 = self.cx.k32(1);
        let sub_e = self.b().i_sub(u, None, k1, sh).map_err(be)?;
        let k0 = self.cx.k32(0);
        let is_sub = self.b().i_equal(tb, None, e, k0).map_err(be)?;
        let m = self.b().select(w, None, is_sub, sub, normal).map_err(be)?;
        let e = self.b().select(u, None, is_sub, sub_e, e).map_err(be)?;
        Ok((m, e))
    }

    /// `m - d` where `d <= m`, else `m`.
    fn subtract_fitting(&mut self, w: Word, m: Word, d: Word) -> R<Word> {
        let tb = self.cx.t_bool;
        let fits = self.b().u_greater_than_equal(tb, None, m, d).map_err(be)?;
        let diff = self.b().i_sub(w, None, m, d).map_err(be)?;
        self.b().select(w, None, fits, diff, m).map_err(be)
    }

    /// The index of the highest set bit of word `v` as a `uint32` (all ones for 0).
    /// `FindUMsb` takes 32-bit operands only, so a 64-bit word is searched by halves.
    fn msb(&mut self, w: Word, v: Word) -> R<Word> {
        let (u, tb) = (self.cx.t_u32, self.cx.t_bool);
        if w == u {
            return self.cx.glsl1(u, GLOp::FindUMsb, v);
        }
        let k32 = self.cx.konst(w, 32);
        let hi = self.b().shift_right_logical(w, None, v, k32).map_err(be)?;
        let hi = self.narrow(w, hi)?;
        let lo = self.narrow(w, v)?;
        let mh = self.cx.glsl1(u, GLOp::FindUMsb, hi)?;
        let kk = self.cx.k32(32);
        let mh = self.b().i_add(u, None, mh, kk).map_err(be)?;
        let ml = self.cx.glsl1(u, GLOp::FindUMsb, lo)?;
        let k0 = self.cx.k32(0);
        let has_hi = self.b().i_not_equal(tb, None, hi, k0).map_err(be)?;
        self.b().select(u, None, has_hi, mh, ml).map_err(be)
    }

    /// A `uint32` as word type `w`.
    fn widen(&mut self, w: Word, v: Word) -> R<Word> {
        if w == self.cx.t_u32 {
            return Ok(v);
        }
        self.b().u_convert(w, None, v).map_err(be)
    }

    /// The low 32 bits of a word of type `w`.
    fn narrow(&mut self, w: Word, v: Word) -> R<Word> {
        let u = self.cx.t_u32;
        if w == u {
            return Ok(v);
        }
        self.b().u_convert(u, None, v).map_err(be)
    }
}
