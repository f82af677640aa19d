//! `Vector<T,N>` values (XPU §2.11, T2), lowered entirely by the checker.
//!
//! Representation: a vector value is `N` consecutive scalar registers of type `T` (its lanes);
//! a [`Val`] of vector type names the first one. Every operation is the scalar operation per
//! lane, so every executor (interpreter, JIT, CPU kernels, PTX, SPIR-V) runs vector code with
//! no new opcode or register type. A mask is a `Vector<boolean,N>`. Vector results are always
//! computed into a fresh block (never a reused temporary), so a block never aliases another
//! live value.
//!
//! float16/bfloat16 lanes compute in float32 (their arithmetic gives float32 vectors, which
//! convert back lane by lane on store, see [`half_pair`]). `v[k]` with a run-time `k` is a
//! checked int64 index (device code: `chk.idx`) and a chain of guarded moves
//! ([`FnBuilder::lane_select`]).
//!
//! Calls: a vector parameter is `N` parameter registers (as POD parameters of device code are
//! flattened). A host function returns lane 0 with `ret` and lanes `1…N−1` through hidden
//! statics (`$vret.<T>.<k>`, see `collect`), read by the caller right after the call. Device
//! code cannot use statics: a `@Device` function returning a vector is inlined at each call
//! (`inline.rs`, see docs/spec-decisions.md).

use super::expr::{typed_op, Place};
use super::func::{FnBuilder, Loc, Own, Reg, Val};
use super::ty::{Num, Ty};
use crate::ast::{Arg, BinOp, Expr, ExprKind, Ident, TypeArg, UnOp};
use crate::diag::{code, Span};
use cajeta_bytecode::{Op, RegionKind, Scalar, Type};

/// A lane of `v[k]`.
enum Lane {
    /// A constant lane.
    Const(usize),
    /// An int64 register, checked to be a lane.
    Dyn(Reg),
}

/// Element types whose vectors convert implicitly lane by lane: a float16/bfloat16 vector and
/// a float32 one (its arithmetic's type; narrowing rounds per lane on store, as for scalars).
pub fn half_pair(a: Scalar, b: Scalar) -> bool {
    (a.is_half() && b == Scalar::F32) || (b.is_half() && a == Scalar::F32)
}

/// Largest lane count (XPU §2.11).
pub const MAX_LANES: i128 = 16;

/// The lane of a named component `.x .y .z .w`.
fn lane_of(name: &str) -> Option<usize> {
    match name {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        "w" => Some(3),
        _ => None,
    }
}

/// The lane count written in a type argument or `vload<N>`: an integer literal (optionally
/// parenthesised). `Err` is the message of a `CAJETA_ERROR_VECTOR_LENGTH`.
pub fn lane_count(e: &Expr) -> Result<u8, String> {
    let n: Option<i128> = match &e.kind {
        ExprKind::Int { value, .. } => Some(*value as i128),
        ExprKind::Paren(inner) => return lane_count(inner),
        ExprKind::Unary {
            op: UnOp::Neg,
            operand,
        } => match operand.kind {
            ExprKind::Int { value, .. } => Some(-(value as i128)),
            _ => None,
        },
        _ => None,
    };
    match n {
        Some(n) if (1..=MAX_LANES).contains(&n) => Ok(n as u8),
        Some(n) => Err(format!("a Vector has 1 to {MAX_LANES} lanes, not {n}")),
        None => Err("a Vector's lane count must be an integer constant".into()),
    }
}

impl FnBuilder<'_> {
    /// `n` fresh consecutive registers of scalar `s` (a vector block).
    pub fn vec_block(&mut self, s: Scalar, n: usize) -> Reg {
        let base = self.new_reg(Type::Scalar(s));
        for _ in 1..n {
            self.new_reg(Type::Scalar(s));
        }
        base
    }

    /// Copies the `n` lanes of block `src` into block `dst`.
    pub fn vec_copy(&mut self, dst: Reg, src: Reg, n: usize) {
        if dst == src {
            return;
        }
        for k in 0..n as u16 {
            self.emit(Op::Mov, dst + k, src + k, 0);
        }
    }

    /// Vector `v` converted lane by lane to element type `to` (a fresh block; the scalar
    /// conversion per lane, so float16/bfloat16 round once per lane).
    pub fn vec_convert(&mut self, v: &Val, to: Scalar) -> Option<Val> {
        let Ty::Vector(s, n) = v.ty else {
            return None;
        };
        let src = self.materialize(v)?;
        let dst = self.vec_block(to, n as usize);
        for k in 0..u16::from(n) {
            let r = self.convert(src + k, s, to);
            if r == src + k {
                self.emit(Op::Mov, dst + k, r, 0);
            } else {
                self.move_into(dst + k, r);
            }
        }
        Some(Val::reg(Ty::Vector(to, n), dst))
    }

    /// Reports a mismatch between two vector types (or a vector and something else) with the
    /// spec's codes: different element types are `CAJETA_ERROR_VECTOR_ELEMENT_TYPE`, different
    /// lane counts `CAJETA_ERROR_VECTOR_LENGTH`, anything else `CAJETA_ERROR_TYPE_MISMATCH`.
    pub fn vector_mismatch(&mut self, from: &Ty, to: &Ty, span: Span, what: &str) {
        let (a, b) = (self.ty_name(from), self.ty_name(to));
        let c = match (from, to) {
            (Ty::Vector(x, _), Ty::Vector(y, _)) if x != y => code::VECTOR_ELEMENT_TYPE,
            (Ty::Vector(_, m), Ty::Vector(_, n)) if m != n => code::VECTOR_LENGTH,
            _ => code::TYPE_MISMATCH,
        };
        self.error(c, span, format!("{what}: {a} and {b} do not match"));
    }

    /// `stack Vector<T,N>(…)`: `N` arguments, or one broadcast to every lane, converted to `T`.
    pub fn vector_new(&mut self, s: Scalar, n: u8, args: &[Arg], span: Span) -> Val {
        let n = n as usize;
        let ty = Ty::Vector(s, n as u8);
        if let Some(a) = args.iter().find(|a| a.name.is_some()) {
            self.error(
                code::NAMEDARG,
                a.value.span,
                "a Vector takes no named arguments",
            );
            return Val::error();
        }
        if args.len() != n && args.len() != 1 {
            let _ = self.eval_args(args);
            let n_name = self.ty_name(&ty);
            self.error(
                code::VECTOR_CONSTRUCT,
                span,
                format!(
                    "{n_name} is built from {n} lane values or one broadcast value, not {}",
                    args.len()
                ),
            );
            return Val::error();
        }
        let mut lanes = vec![];
        for a in args {
            let v = self.expr(&a.value);
            if let Ty::Vector(..) = v.ty {
                let from = v.ty.clone();
                self.vector_mismatch(&from, &Ty::Prim(s), a.value.span, "a lane value");
                return Val::error();
            }
            let Some(r) = self.coerce(v, &Ty::Prim(s), a.value.span) else {
                return Val::error();
            };
            lanes.push(r);
        }
        let base = self.vec_block(s, n);
        for k in 0..n {
            if let [one] = lanes[..] {
                // A broadcast reads its source N times: plain moves (no retargeting).
                self.emit(Op::Mov, base + k as u16, one, 0);
            } else {
                self.move_into(base + k as u16, lanes[k]);
            }
        }
        Val::reg(ty, base)
    }

    /// The lane index of `v[k]` (the access `at`) on the vector of `n` lanes at `base`: a
    /// constant lane, or an int64 register checked at run time to be in `0…n−1`, whose fault
    /// points at the access's first character, as an array's does (LANGUAGE §10.3); `None`
    /// after an error.
    fn lane_index(&mut self, index: &Expr, n: u8, base: Reg, at: Span) -> Option<Lane> {
        let iv = self.expr(index);
        match (iv.num(), iv.ty.is_int()) {
            (Some(Num::Int(k)), true) if (0..n as i128).contains(&k) => {
                Some(Lane::Const(k as usize))
            }
            (Some(Num::Int(k)), true) => {
                self.error(
                    code::TYPE_MISMATCH,
                    index.span,
                    format!("lane {k} is out of range for a vector of {n} lanes"),
                );
                None
            }
            _ if iv.ty == Ty::Error => None,
            (_, true) => {
                let idx = self.coerce(iv, &Ty::Prim(Scalar::I64), index.span)?;
                self.set_pos(at);
                self.lane_check(idx, n, base, at)?;
                Some(Lane::Dyn(idx))
            }
            _ => {
                let t = self.ty_name(&iv.ty);
                self.error(
                    code::TYPE_MISMATCH,
                    index.span,
                    format!("a lane index must be an integer, found {t}"),
                );
                None
            }
        }
    }

    /// The lane of `.x/.y/.z/.w` on a vector of `n` lanes; `None` after an error.
    fn named_lane(&mut self, name: &Ident, n: u8, ty: &Ty) -> Option<usize> {
        match lane_of(&name.name) {
            Some(k) if k < n as usize => Some(k),
            Some(k) => {
                self.error(
                    code::TYPE_MISMATCH,
                    name.span,
                    format!(
                        "lane '{}' ({k}) is out of range for a vector of {n} lanes",
                        name.name
                    ),
                );
                None
            }
            None => {
                let t = self.ty_name(ty);
                self.error(
                    code::VARIABLE_NOT_FOUND,
                    name.span,
                    format!("{t} has no field '{}'", name.name),
                );
                None
            }
        }
    }

    /// `v.x` … `v.w` read.
    pub fn vector_field(&mut self, v: Val, name: &Ident) -> Val {
        let Ty::Vector(s, n) = v.ty else {
            return Val::error();
        };
        let Some(k) = self.named_lane(name, n, &v.ty) else {
            return Val::error();
        };
        let Some(base) = self.materialize(&v) else {
            return Val::error();
        };
        Val::reg(Ty::Prim(s), base + k as u16)
    }

    /// `v[k]` read (the access `at`).
    pub fn vector_index(&mut self, v: Val, index: &Expr, at: Span) -> Val {
        let Ty::Vector(s, n) = v.ty else {
            return Val::error();
        };
        let Some(base) = self.materialize(&v) else {
            return Val::error();
        };
        match self.lane_index(index, n, base, at) {
            Some(Lane::Const(k)) => Val::reg(Ty::Prim(s), base + k as u16),
            Some(Lane::Dyn(idx)) => {
                Val::reg(Ty::Prim(s), self.lane_select(base, n, idx, s, index.span))
            }
            None => Val::error(),
        }
    }

    /// Faults unless int64 register `idx` is a lane of the vector of `n` lanes at `base`
    /// (XPU §2.11): on the host, the failing path indexes a fresh array of `n` elements, which
    /// raises exactly the array's `E-BOUNDS` (`index <i> out of bounds for length <n>`) on
    /// every executor; device code has no arrays: there `chk.idx` raises `XPU-E-BOUNDS` naming
    /// the vector (see docs/spec-decisions.md). `None` after an error.
    fn lane_check(&mut self, idx: Reg, n: u8, base: Reg, span: Span) -> Option<()> {
        if self.device {
            let len = self.load_bits(Type::I64, u64::from(n));
            self.emit(Op::CheckIndex, idx, len, base);
            return Some(());
        }
        let (lo, hi) = (
            self.load_bits(Type::I64, 0),
            self.load_bits(Type::I64, u64::from(n)),
        );
        let i = Val::reg(Ty::Prim(Scalar::I64), idx);
        let below = self.binary_vals(
            BinOp::Lt,
            i.clone(),
            Val::reg(Ty::Prim(Scalar::I64), lo),
            span,
        );
        let above = self.binary_vals(BinOp::Ge, i, Val::reg(Ty::Prim(Scalar::I64), hi), span);
        let (Some(below), Some(above)) = (self.materialize(&below), self.materialize(&above))
        else {
            return None;
        };
        let bad = self.temp(Type::BOOL);
        self.emit(Op::OrBool, bad, below, above);
        let skip = self.emit_bc(Op::JmpIfNot, bad, 0);
        let arr_ty = Ty::Array(Box::new(Ty::Prim(Scalar::I32))).reg();
        let arr = self.new_reg(arr_ty);
        self.emit(Op::NewArr, arr, hi, 0);
        let sink = self.new_reg(Type::Scalar(Scalar::I32));
        self.emit(Op::ArrGetI32, sink, arr, idx);
        let merge = self.pc();
        self.patch(skip, merge);
        self.region(RegionKind::If, skip as u32, 0, merge);
        Some(())
    }

    /// Lane `idx` (int64, checked) of the `n` lanes at `base`: lane 0, replaced by lane `k`
    /// where `idx == k` (a chain of guarded moves, as `select`).
    pub(super) fn lane_select(&mut self, base: Reg, n: u8, idx: Reg, s: Scalar, span: Span) -> Reg {
        let dst = self.new_reg(Type::Scalar(s));
        self.emit(Op::Mov, dst, base, 0);
        for k in 1..u16::from(n) {
            let hit = self.lane_is(idx, k, span);
            self.guarded_mov(hit, dst, base + k);
        }
        dst
    }

    /// Stores `r` into lane `idx` (int64, checked) of the `n` lanes at `base`.
    pub(super) fn lane_store(&mut self, base: Reg, n: u8, idx: Reg, r: Reg, span: Span) {
        for k in 0..u16::from(n) {
            let hit = self.lane_is(idx, k, span);
            self.guarded_mov(hit, base + k, r);
        }
    }

    /// A boolean register: `idx == k`.
    fn lane_is(&mut self, idx: Reg, k: u16, span: Span) -> Reg {
        let kr = self.load_bits(Type::I64, u64::from(k));
        let i64t = Ty::Prim(Scalar::I64);
        let eq = self.binary_vals(
            BinOp::Eq,
            Val::reg(i64t.clone(), idx),
            Val::reg(i64t, kr),
            span,
        );
        self.materialize(&eq).unwrap_or(kr)
    }

    /// A lane of a vector local as an assignment target (`v.x = …`, `v[1] += …`); `None`
    /// when `target` is not a lane of a vector, `Some(None)` after an error.
    pub(super) fn vector_place(&mut self, target: &Expr) -> Option<Option<Place>> {
        let (obj, lane) = match &target.kind {
            ExprKind::Field { target: obj, name } => (obj, Ok(name)),
            ExprKind::Index { target: obj, index } => (obj, Err(index)),
            _ => return None,
        };
        let ExprKind::Name(id) = &obj.kind else {
            return None;
        };
        let li = self.lookup_local(&id.name)?;
        let Ty::Vector(s, n) = self.locals[li].ty else {
            return None;
        };
        let ty = self.locals[li].ty.clone();
        // A lane write reads the rest of the vector: it must be assigned already.
        let _ = self.load_place(&Place::Local(li), obj.span);
        if self.locals[li].is_final {
            let name = self.locals[li].name.clone();
            self.error(
                code::FINAL_ASSIGNMENT,
                target.span,
                format!("final variable '{name}' cannot have a lane assigned"),
            );
        }
        let reg = self.locals[li].reg;
        let k = match lane {
            Ok(name) => self.named_lane(name, n, &ty).map(Lane::Const),
            Err(index) => self.lane_index(index, n, reg, target.span),
        };
        Some(k.map(|k| match k {
            Lane::Const(k) => Place::Lane {
                reg: reg + k as u16,
                elem: s,
            },
            Lane::Dyn(idx) => Place::DynLane {
                base: reg,
                n,
                idx,
                elem: s,
            },
        }))
    }

    /// A lane-wise unary operator.
    pub fn vector_unary(&mut self, op: UnOp, v: Val, span: Span) -> Val {
        let Ty::Vector(s, n) = v.ty else {
            return Val::error();
        };
        if s.is_half() && matches!(op, UnOp::Plus | UnOp::Neg) {
            // As for scalars (§3.4), +/- of float16/bfloat16 lanes give float32 lanes.
            let Some(w) = self.vec_convert(&v, Scalar::F32) else {
                return Val::error();
            };
            return self.vector_unary(op, w, span);
        }
        let opcode = match op {
            UnOp::Plus if s.is_numeric() => return v,
            UnOp::Neg if s.is_numeric() => typed_op("neg", s),
            UnOp::BitNot if s.is_int() => typed_op("not", s),
            UnOp::Not if s == Scalar::Bool => Some(Op::LNot),
            _ => None,
        };
        let Some(opcode) = opcode else {
            let t = self.ty_name(&v.ty);
            self.error(
                code::TYPE_MISMATCH,
                span,
                format!("this operator cannot be applied to {t}"),
            );
            return Val::error();
        };
        let Some(src) = self.materialize(&v) else {
            return Val::error();
        };
        self.set_pos(span);
        let dst = self.vec_block(s, n as usize);
        for k in 0..n as u16 {
            self.emit(opcode, dst + k, src + k, 0);
        }
        Val::reg(v.ty, dst)
    }

    /// A lane-wise binary operator: two vectors of one type, or a vector and a scalar
    /// (converted to the element type, then broadcast). Comparisons give masks.
    pub fn vector_binary(&mut self, op: BinOp, l: Val, r: Val, span: Span) -> Val {
        let (s, n) = match (&l.ty, &r.ty) {
            (Ty::Vector(a, m), Ty::Vector(b, k)) => {
                // float16/bfloat16 lanes combine with float32 ones by the scalar rule.
                if (a != b && !half_pair(*a, *b)) || m != k {
                    let (lt, rt) = (l.ty.clone(), r.ty.clone());
                    self.vector_mismatch(&lt, &rt, span, "lane-wise operands");
                    return Val::error();
                }
                (*a, *m)
            }
            (Ty::Vector(a, m), _) | (_, Ty::Vector(a, m)) => (*a, *m),
            _ => return Val::error(),
        };
        if matches!(op, BinOp::And | BinOp::Or) {
            self.error(
                code::TYPE_MISMATCH,
                span,
                "'&&' and '||' do not apply to vectors (use '&' and '|' on masks)",
            );
            return Val::error();
        }
        // Each side as a function from lane to a scalar value.
        let side = |fb: &mut Self, v: Val| -> Option<(Reg, bool)> {
            match v.ty {
                Ty::Vector(..) => fb.materialize(&v).map(|r| (r, true)),
                // Half lanes compute in float32: a scalar joins by the scalar rule, as it is.
                Ty::Prim(t) if s.is_half() && t.is_numeric() && v.num().is_none() => {
                    fb.materialize(&v).map(|r| (r, false))
                }
                Ty::Prim(_) if s.is_half() && v.num().is_some() => {
                    let r = fb.coerce(v, &Ty::Prim(Scalar::F32), span)?;
                    Some((r, false))
                }
                Ty::Prim(_) => {
                    let vspan = span;
                    fb.coerce(v, &Ty::Prim(s), vspan).map(|r| (r, false))
                }
                ref t => {
                    let (a, b) = (fb.ty_name(t), fb.ty_name(&Ty::Vector(s, n)));
                    fb.error(
                        code::TYPE_MISMATCH,
                        span,
                        format!("cannot combine {a} with {b}"),
                    );
                    None
                }
            }
        };
        let lane_ty = |v: &Val| match v.ty {
            Ty::Vector(t, _) => Ty::Prim(t),
            Ty::Prim(t) if s.is_half() && t.is_numeric() && v.num().is_none() => Ty::Prim(t),
            Ty::Prim(_) if s.is_half() => Ty::Prim(Scalar::F32),
            _ => Ty::Prim(s),
        };
        let (lt, rt) = (lane_ty(&l), lane_ty(&r));
        let (Some((lr, lv)), Some((rr, rv))) = (side(self, l), side(self, r)) else {
            return Val::error();
        };
        let mut dst: Option<(Reg, Scalar)> = None;
        for k in 0..n as u16 {
            let a = Val::reg(lt.clone(), if lv { lr + k } else { lr });
            let b = Val::reg(rt.clone(), if rv { rr + k } else { rr });
            let res = self.binary_vals(op, a, b, span);
            let Ty::Prim(rs) = res.ty else {
                return Val::error();
            };
            let Some(rreg) = self.materialize(&res) else {
                return Val::error();
            };
            let (base, bs) = *dst.get_or_insert_with(|| (self.vec_block(rs, n as usize), rs));
            if bs != rs {
                return Val::error();
            }
            self.move_into(base + k, rreg);
        }
        match dst {
            Some((base, rs)) => Val::reg(Ty::Vector(rs, n), base),
            None => Val::error(),
        }
    }

    /// `dst := m ? a : b` for one lane (a move and a guarded move: there is no select
    /// opcode, and a structured `if` region keeps SPIR-V's control flow structured).
    fn emit_select(&mut self, dst: Reg, m: Reg, a: Reg, b: Reg) {
        self.emit(Op::Mov, dst, b, 0);
        self.guarded_mov(m, dst, a);
    }

    /// `if (cond) dst := src` as a structured `if` region.
    fn guarded_mov(&mut self, cond: Reg, dst: Reg, src: Reg) {
        let skip = self.emit_bc(Op::JmpIfNot, cond, 0);
        self.emit(Op::Mov, dst, src, 0);
        let merge = self.pc();
        self.patch(skip, merge);
        self.region(RegionKind::If, skip as u32, 0, merge);
    }

    /// `select`, `all`, `any` on masks and `dot` on numeric vectors.
    pub fn vector_method(&mut self, recv: Val, name: &Ident, args: &[Arg], span: Span) -> Val {
        let Ty::Vector(s, n) = recv.ty else {
            return Val::error();
        };
        let vals = self.eval_args(args);
        if vals.iter().any(|v| v.ty == Ty::Error) {
            return Val::error();
        }
        let Some(base) = self.materialize(&recv) else {
            return Val::error();
        };
        let is_mask = s == Scalar::Bool;
        let arity = |fb: &mut Self, want: usize| -> bool {
            if vals.len() != want {
                fb.error(
                    code::UNRESOLVED_METHOD,
                    span,
                    format!("'{}' takes {want} argument(s)", name.name),
                );
                return false;
            }
            true
        };
        self.set_pos(span);
        match name.name.as_str() {
            "all" | "any" if is_mask => {
                if !arity(self, 0) {
                    return Val::error();
                }
                let op = if name.name == "all" {
                    Op::AndBool
                } else {
                    Op::OrBool
                };
                let acc = self.new_reg(Type::BOOL);
                self.emit(Op::Mov, acc, base, 0);
                for k in 1..n as u16 {
                    self.emit(op, acc, acc, base + k);
                }
                Val::reg(Ty::BOOL, acc)
            }
            "select" if is_mask => {
                if !arity(self, 2) {
                    return Val::error();
                }
                let (a, b) = (vals[0].clone(), vals[1].clone());
                let (Ty::Vector(t, m), Ty::Vector(..)) = (&a.ty, &b.ty) else {
                    self.error(
                        code::TYPE_MISMATCH,
                        span,
                        "select takes two vectors of the mask's lane count",
                    );
                    return Val::error();
                };
                let (t, m) = (*t, *m);
                if a.ty != b.ty {
                    let (at, bt) = (a.ty.clone(), b.ty.clone());
                    self.vector_mismatch(&at, &bt, span, "select operands");
                    return Val::error();
                }
                if m != n {
                    let at = a.ty.clone();
                    self.vector_mismatch(&Ty::Vector(s, n), &at, span, "mask and operands");
                    return Val::error();
                }
                let (Some(ar), Some(br)) = (self.materialize(&a), self.materialize(&b)) else {
                    return Val::error();
                };
                let dst = self.vec_block(t, n as usize);
                for k in 0..n as u16 {
                    self.emit_select(dst + k, base + k, ar + k, br + k);
                }
                Val::reg(Ty::Vector(t, n), dst)
            }
            "dot" if s.is_numeric() => {
                if !arity(self, 1) {
                    return Val::error();
                }
                let o = vals[0].clone();
                if o.ty != recv.ty {
                    let ot = o.ty.clone();
                    self.vector_mismatch(&recv.ty, &ot, span, "dot operands");
                    return Val::error();
                }
                let Some(mut or) = self.materialize(&o) else {
                    return Val::error();
                };
                let (mut base, mut s) = (base, s);
                if s.is_half() {
                    // Products and sums of float16/bfloat16 lanes are float32 (LANGUAGE §4).
                    let (Some(a), Some(b)) = (
                        self.vec_convert(&Val::reg(recv.ty.clone(), base), Scalar::F32),
                        self.vec_convert(&Val::reg(recv.ty.clone(), or), Scalar::F32),
                    ) else {
                        return Val::error();
                    };
                    let (Some(a), Some(b)) = (self.materialize(&a), self.materialize(&b)) else {
                        return Val::error();
                    };
                    (base, or, s) = (a, b, Scalar::F32);
                }
                let (Some(mul), Some(add)) = (typed_op("mul", s), typed_op("add", s)) else {
                    return Val::error();
                };
                let acc = self.new_reg(Type::Scalar(s));
                self.emit(mul, acc, base, or);
                for k in 1..n as u16 {
                    let t = self.temp(Type::Scalar(s));
                    self.emit(mul, t, base + k, or + k);
                    self.emit(add, acc, acc, t);
                }
                Val::reg(Ty::Prim(s), acc)
            }
            _ => {
                let t = self.ty_name(&recv.ty);
                self.error(
                    code::UNRESOLVED_METHOD,
                    name.span,
                    format!("{t} has no method '{}'", name.name),
                );
                Val::error()
            }
        }
    }

    /// `b.vload<N>(i)` / `b.vstore(i, v)` on a buffer, shared array (device code) or host
    /// array; `None` when the receiver is none of these (an ordinary method call).
    pub fn vector_mem(
        &mut self,
        target: &Expr,
        name: &Ident,
        type_args: &[TypeArg],
        args: &[Arg],
        span: Span,
    ) -> Option<Val> {
        let recv = self.expr(target);
        let (elem, device_mem) = match &recv.ty {
            Ty::Buffer(s) | Ty::Shared(s) => (*s, true),
            Ty::Array(e) => match **e {
                Ty::Prim(s) if s.is_numeric() => (s, false),
                _ => return Some(self.method_on_value(recv, name, args, span)),
            },
            Ty::Error => {
                let _ = self.eval_args(args);
                return Some(Val::error());
            }
            _ => return Some(self.method_on_value(recv, name, args, span)),
        };
        if device_mem && !self.device_only(&format!("'{}'", name.name), span) {
            let _ = self.eval_args(args);
            return Some(Val::error());
        }
        let Some(base) = self.materialize(&recv) else {
            return Some(Val::error());
        };
        let load = name.name == "vload";
        let n = if load {
            let [TypeArg::Const(e)] = type_args else {
                self.error(
                    code::VECTOR_LENGTH,
                    span,
                    "vload needs its lane count: vload<N>(i)",
                );
                return Some(Val::error());
            };
            match lane_count(e) {
                Ok(n) => Some(n),
                Err(m) => {
                    self.error(code::VECTOR_LENGTH, e.span, m);
                    return Some(Val::error());
                }
            }
        } else {
            if !type_args.is_empty() {
                self.error(
                    code::TYPE_MISMATCH,
                    span,
                    "vstore takes no type arguments (the lane count is the vector's)",
                );
                return Some(Val::error());
            }
            None
        };
        let want = if load { 1 } else { 2 };
        if args.len() != want || args.iter().any(|a| a.name.is_some()) {
            let _ = self.eval_args(args);
            self.error(
                code::UNRESOLVED_METHOD,
                span,
                format!("'{}' takes {want} positional argument(s)", name.name),
            );
            return Some(Val::error());
        }
        let iv = self.expr(&args[0].value);
        let Some(idx) = self.device_index(&iv, args[0].value.span) else {
            return Some(Val::error());
        };
        let add = typed_op("add", Scalar::I64).expect("add.i64");
        let lane_index = |fb: &mut Self, k: u16| -> Reg {
            if k == 0 {
                return idx;
            }
            let kr = fb.load_bits(Type::I64, k as u64);
            fb.def(add, Type::I64, idx, kr)
        };
        let place = |idx: Reg| {
            if device_mem {
                Place::Dev { base, idx, elem }
            } else {
                Place::Elem {
                    arr: base,
                    idx,
                    elem: Ty::Prim(elem),
                }
            }
        };
        if let Some(n) = n {
            let dst = self.vec_block(elem, n as usize);
            for k in 0..n as u16 {
                let i = lane_index(self, k);
                let v = self.load_place(&place(i), span);
                if let Some(r) = self.materialize(&v) {
                    self.move_into(dst + k, r);
                }
            }
            return Some(Val::reg(Ty::Vector(elem, n), dst));
        }
        let v = self.expr(&args[1].value);
        let (vs, vn) = match v.ty {
            Ty::Vector(vs, vn) => (vs, vn),
            Ty::Error => return Some(Val::error()),
            ref t => {
                let t = t.clone();
                self.vector_mismatch(&t, &Ty::Vector(elem, 1), args[1].value.span, "vstore value");
                return Some(Val::error());
            }
        };
        // A float32 vector (a float16/bfloat16 vector's arithmetic) rounds per lane on store.
        if vs != elem && !half_pair(vs, elem) {
            self.vector_mismatch(
                &Ty::Vector(vs, vn),
                &Ty::Vector(elem, vn),
                args[1].value.span,
                "vstore value and element type",
            );
            return Some(Val::error());
        }
        let src = self.materialize(&v)?;
        for k in 0..vn as u16 {
            let i = lane_index(self, k);
            let lane = Val::reg(Ty::Prim(vs), src + k);
            let p = place(i);
            self.store_place(p, Ty::Prim(elem), lane, span, args[1].value.span, span);
        }
        Some(Val {
            ty: Ty::Void,
            loc: Loc::None,
            untyped: false,
            own: Own::No,
        })
    }
}

impl FnBuilder<'_> {
    /// A `Math` function with at least one vector argument (XPU §2.11: `Math` applies
    /// lane-wise): the scalar function of lane `k` of every vector argument (scalar arguments
    /// are used for every lane), so each lane's result type is the scalar rule's (§2.12).
    /// Vector arguments share one lane count and one numeric element type.
    pub(super) fn math_lanes(
        &mut self,
        name: &Ident,
        vals: Vec<Val>,
        args: &[Arg],
        span: Span,
    ) -> Val {
        let Some((s, n)) = vals.iter().find_map(|v| match v.ty {
            Ty::Vector(s, n) => Some((s, n)),
            _ => None,
        }) else {
            return Val::error();
        };
        let mut lanes_of = vec![];
        for (v, a) in vals.iter().zip(args) {
            match v.ty {
                Ty::Vector(t, m) if t != s || m != n => {
                    let vt = v.ty.clone();
                    self.vector_mismatch(&Ty::Vector(s, n), &vt, a.value.span, "Math operands");
                    return Val::error();
                }
                Ty::Vector(t, _) if !t.is_numeric() => {
                    let vt = self.ty_name(&v.ty);
                    self.error(
                        code::TYPE_MISMATCH,
                        a.value.span,
                        format!("Math.{} needs numeric arguments, found {vt}", name.name),
                    );
                    return Val::error();
                }
                Ty::Vector(..) => {
                    let Some(r) = self.materialize(v) else {
                        return Val::error();
                    };
                    lanes_of.push(Some(r));
                }
                // A scalar is evaluated once and read by every lane.
                _ if v.num().is_some() => lanes_of.push(None),
                _ => {
                    let Some(r) = self.materialize(v) else {
                        return Val::error();
                    };
                    lanes_of.push(Some(r));
                }
            }
        }
        let mut dst: Option<(Reg, Scalar)> = None;
        for k in 0..u16::from(n) {
            let lane_vals: Vec<Val> = vals
                .iter()
                .zip(&lanes_of)
                .map(|(v, r)| match (&v.ty, r) {
                    (Ty::Vector(t, _), Some(r)) => Val::reg(Ty::Prim(*t), r + k),
                    (t, Some(r)) => Val::reg(t.clone(), *r),
                    (_, None) => v.clone(),
                })
                .collect();
            let res = self.math_vals(name, lane_vals, args, span);
            let Ty::Prim(rs) = res.ty else {
                return Val::error();
            };
            let Some(rr) = self.materialize(&res) else {
                return Val::error();
            };
            let (base, bs) = *dst.get_or_insert_with(|| (self.vec_block(rs, n as usize), rs));
            if bs != rs {
                return Val::error();
            }
            // A plain move: the lane result may be an argument's own lane register.
            self.emit(Op::Mov, base + k, rr, 0);
        }
        match dst {
            Some((base, rs)) => Val::reg(Ty::Vector(rs, n), base),
            None => Val::error(),
        }
    }

    /// Before `ret` of a host function's vector result in block `r`: lanes `1…N−1` go to the
    /// hidden result statics (lane 0 is returned).
    pub fn vector_result_lanes(&mut self, ret: &Ty, r: Reg) {
        let Ty::Vector(s, n) = *ret else {
            return;
        };
        if self.device {
            // Device calls of it are inlined (`inline.rs`): the function itself returns lane 0
            // to nobody.
            return;
        }
        for k in 1..n {
            if let Some(&si) = self.p.vret.get(&(s, k)) {
                self.emit(Op::SetStatic, r + k as u16, si as u16, 0);
            }
        }
    }

    /// After a call returning a vector: lane 0 is the call's result `d`, lanes `1…N−1` are
    /// read from the hidden result statics at once (before any other call can reuse them).
    pub fn vector_call_result(&mut self, ret: &Ty, d: Reg) -> Val {
        let Ty::Vector(s, n) = *ret else {
            return Val::error();
        };
        let dst = self.vec_block(s, n as usize);
        self.move_into(dst, d);
        for k in 1..n {
            if let Some(&si) = self.p.vret.get(&(s, k)) {
                self.emit(Op::GetStatic, dst + k as u16, si as u16, 0);
            }
        }
        Val::reg(ret.clone(), dst)
    }
}

impl FnBuilder<'_> {
    /// Moves a value of type `t` from `src` to `dst`: every lane of a vector.
    pub fn move_lanes(&mut self, dst: Reg, src: Reg, t: &Ty) {
        match t {
            Ty::Vector(_, n) => self.vec_copy(dst, src, *n as usize),
            _ => self.move_into(dst, src),
        }
    }
}
