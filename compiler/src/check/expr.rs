//! Lowering of expressions: names, fields, literals and untyped constants, operators with the
//! numeric rules of LANGUAGE §3–§4, assignments with ownership (§6), casts, creation, indexing
//! and calls with overload resolution and named arguments (§8.4).

use super::builtins::{self, LibClass};
use super::collect::ClassRef;
use super::func::{FnBuilder, Loc, Own, Reg, Val};
use super::ty::{self, Num, Ty};
use super::{Access, MethodSig};
use crate::ast::{Arg, BinOp, Expr, ExprKind, Placement, UnOp};
use crate::diag::{code, Span};
use cajeta_bytecode::{format, half, Op, Scalar, Type};
use std::collections::HashMap;
use std::sync::OnceLock;

/// The opcode with mnemonic `name.suffix` (e.g. `add.i32`), if it exists.
pub fn typed_op(name: &str, s: Scalar) -> Option<Op> {
    static TABLE: OnceLock<HashMap<&'static str, Op>> = OnceLock::new();
    let t = TABLE.get_or_init(|| Op::ALL.iter().map(|op| (op.mnemonic(), *op)).collect());
    t.get(format!("{name}.{}", s.suffix()).as_str()).copied()
}

/// A resolved assignment target.
pub(super) enum Place {
    Local(usize),
    Static(u32),
    Field {
        obj: Reg,
        field: u16,
        ty: Ty,
    },
    Elem {
        arr: Reg,
        idx: Reg,
        elem: Ty,
    },
    Dev {
        base: Reg,
        idx: Reg,
        elem: Scalar,
    },
    /// A lane of a vector local: its register.
    Lane {
        reg: Reg,
        elem: Scalar,
    },
    /// A lane of a vector local chosen at run time: `base` is the first of its `n` lanes,
    /// `idx` an int64 lane index already checked to be in `0…n−1`.
    DynLane {
        base: Reg,
        n: u8,
        idx: Reg,
        elem: Scalar,
    },
}

impl FnBuilder<'_> {
    /// Lowers an expression whose value will be converted to `target` (a hint; the caller
    /// still converts).
    pub fn expr_for(&mut self, e: &Expr, target: &Ty) -> Val {
        // An array literal takes its element type from the target (LANGUAGE §6.1).
        if let (ExprKind::ArrayLit(items), Ty::Array(elem)) = (&e.kind, target) {
            return self.array_literal(items, Some((**elem).clone()), e.span);
        }
        self.expr(e)
    }

    /// Lowers a condition: must be boolean. Also returns the definite-assignment states when
    /// the condition is true and when it is false (Java's rules for `&&`, `||`, `!`).
    pub fn cond(&mut self, e: &Expr) -> (Option<Reg>, Vec<bool>, Vec<bool>) {
        let (v, t, f) = self.bool_expr(e);
        let r = match v.ty {
            Ty::Prim(Scalar::Bool) => self.materialize(&v),
            Ty::Error => None,
            Ty::Void => {
                self.void_value(&v, e.span);
                None
            }
            ref t => {
                let n = self.ty_name(t);
                self.error(
                    code::TYPE_MISMATCH,
                    e.span,
                    format!("condition must be boolean, found {n}"),
                );
                None
            }
        };
        (r, t, f)
    }

    /// Reports `v` when it is a `void` call where a value is needed (LANGUAGE §8.4:
    /// `CAJETA_ERROR_UNRESOLVED_EXPRESSION`, at the call `at`). True if it is one.
    pub(super) fn void_value(&mut self, v: &Val, at: Span) -> bool {
        if v.ty != Ty::Void {
            return false;
        }
        self.error(code::UNRESOLVED_EXPRESSION, at, "a void call has no value");
        true
    }

    /// Lowers a (possibly) boolean expression, tracking definite assignment when true/false.
    fn bool_expr(&mut self, e: &Expr) -> (Val, Vec<bool>, Vec<bool>) {
        match &e.kind {
            ExprKind::Paren(inner) => self.bool_expr(inner),
            ExprKind::Unary {
                op: UnOp::Not,
                operand,
            } => {
                let (v, t, f) = self.bool_expr(operand);
                if self.void_value(&v, operand.span) {
                    return (Val::error(), f, t);
                }
                let v = self.not_val(v, e.span);
                (v, f, t)
            }
            ExprKind::Binary {
                op: op @ (BinOp::And | BinOp::Or),
                lhs,
                rhs,
            } => self.short_circuit(*op, lhs, rhs),
            _ => {
                let v = self.expr(e);
                let d = self.da.clone();
                // A constant condition never takes its other way, after which everything
                // counts as assigned (the conventional Java analysis, §7: `if (true)`).
                let all = vec![true; d.len()];
                match v.loc {
                    Loc::Bool(true) => (v, d, all),
                    Loc::Bool(false) => (v, all, d),
                    _ => (v, d.clone(), d),
                }
            }
        }
    }

    /// Emits an instruction defining a fresh temporary (so that a following move can retarget
    /// it, see [`FnBuilder::move_into`]).
    pub fn def(&mut self, op: Op, t: Type, b: u16, c: u16) -> Reg {
        let r = self.temp(t);
        let pc = self.emit(op, r, b, c);
        self.last_def = Some((pc, r));
        r
    }

    /// Moves `src` into `dst`, retargeting the instruction that just computed `src` when it
    /// was a single-definition temporary.
    pub fn move_into(&mut self, dst: Reg, src: Reg) {
        if dst == src {
            return;
        }
        if let Some((pc, r)) = self.last_def {
            if r == src && pc + 1 == self.code.len() {
                self.code[pc].a = dst;
                if let Some(len) = self.mem_len_reg(src) {
                    self.checked_mems.push((dst, len));
                }
                self.last_def = None;
                // A retargeted write bypasses `emit`'s bookkeeping.
                self.forget_index(dst);
                return;
            }
        }
        self.emit(Op::Mov, dst, src, 0);
    }

    /// Lowers an expression.
    pub fn expr(&mut self, e: &Expr) -> Val {
        match &e.kind {
            ExprKind::Int {
                value,
                non_decimal,
                long,
            } => self.int_lit(*value, *non_decimal, *long, false, e.span),
            ExprKind::Float {
                value,
                f32_suffix,
                text,
                ..
            } => {
                let s = if *f32_suffix {
                    Scalar::F32
                } else {
                    Scalar::F64
                };
                let untyped = !*f32_suffix
                    && !matches!(
                        &e.kind,
                        ExprKind::Float {
                            f64_suffix: true,
                            ..
                        }
                    );
                Val {
                    ty: Ty::Prim(s),
                    loc: Loc::Num(if *f32_suffix {
                        Num::Float(*value)
                    } else {
                        ty::float_literal(*value, text)
                    }),
                    untyped,
                    own: Own::No,
                }
            }
            ExprKind::Char(c) => Val {
                ty: Ty::Prim(Scalar::Char),
                loc: Loc::Char(*c),
                untyped: false,
                own: Own::No,
            },
            ExprKind::Str(s) => {
                if !self.host_only("a String", e.span) {
                    return Val::error();
                }
                Val {
                    ty: Ty::Str,
                    loc: Loc::Str(s.clone()),
                    untyped: false,
                    own: Own::No,
                }
            }
            ExprKind::Bool(b) => Val {
                ty: Ty::BOOL,
                loc: Loc::Bool(*b),
                untyped: false,
                own: Own::No,
            },
            ExprKind::Null => Val::null(),
            ExprKind::Paren(inner) => {
                let mut v = self.expr(inner);
                v.untyped = false;
                v
            }
            ExprKind::Name(id) => self.name(&id.name, e.span),
            ExprKind::This => match self.this {
                Some(r) => Val::reg(Ty::Class(self.class), r),
                None => {
                    self.error(
                        code::VARIABLE_NOT_FOUND,
                        e.span,
                        "'this' is only available in constructors, destructors and instance methods",
                    );
                    Val::error()
                }
            },
            ExprKind::Field { target, name } => self.field(target, name, e.span),
            ExprKind::Unary {
                op: UnOp::Neg,
                operand,
            } if matches!(operand.kind, ExprKind::Int { .. }) => {
                let ExprKind::Int {
                    value,
                    non_decimal,
                    long,
                } = operand.kind
                else {
                    unreachable!()
                };
                self.int_lit(value, non_decimal, long, true, e.span)
            }
            ExprKind::Unary {
                op: UnOp::Neg,
                operand,
            } if matches!(operand.kind, ExprKind::Float { .. }) => {
                let mut v = self.expr(operand);
                match v.loc {
                    Loc::Num(Num::Float(f)) => v.loc = Loc::Num(Num::Float(-f)),
                    Loc::Num(Num::Dec(f, dir)) => v.loc = Loc::Num(Num::Dec(-f, -dir)),
                    _ => {}
                }
                v
            }
            ExprKind::Unary { op, operand } => self.unary(*op, operand, e.span),
            ExprKind::Binary { op, lhs, rhs } => self.binary(*op, lhs, rhs, e.span),
            ExprKind::Assign {
                op,
                transfer,
                target,
                value,
            } => self.assign(*op, *transfer, target, value, e.span),
            ExprKind::Cast { ty, expr } => self.cast(ty, expr, e.span),
            ExprKind::Transfer(inner) => {
                if !names_a_variable(inner) {
                    self.error(
                        code::SYNTAX,
                        e.span,
                        "the operand of '#' must be a local, parameter or field name",
                    );
                    return Val::error();
                }
                let v = self.expr(inner);
                self.take_title(inner, v)
            }
            ExprKind::New {
                placement,
                ty,
                args,
            } => self.new_object(*placement, ty, args, e.span),
            ExprKind::NewArray {
                elem, dims, init, ..
            } => self.new_array(elem, dims, init.as_ref(), e.span),
            ExprKind::Index { target, index } => self.index(target, index, e.span),
            ExprKind::Call {
                target: Some(t),
                name,
                type_args,
                args,
            } if matches!(name.name.as_str(), "vload" | "vstore")
                && self.class_path(t).is_none() =>
            {
                self.vector_mem(t, name, type_args, args, e.span)
                    .unwrap_or_else(Val::error)
            }
            ExprKind::Call {
                target: Some(t),
                name,
                ..
            } if name.name == "launch"
                && !matches!(&t.kind, ExprKind::Name(id) if self.lookup_local(&id.name).is_some())
                && self
                    .launched_method(t)
                    .is_some_and(|(_, k)| k.kind == cajeta_bytecode::FnKind::Kernel) =>
            {
                // `k.launch(grid: …, block: …)` alone: the arguments are missing (XPU §3.4).
                self.error(
                    code::XPU_N02,
                    e.span,
                    "a launch needs the kernel's arguments after its options: `.launch(…)(args)`",
                );
                Val::error()
            }
            ExprKind::Call {
                target,
                name,
                type_args: _,
                args,
            } => self.call(target.as_deref(), name, args, e.span),
            ExprKind::Invoke { callee, args } => self.invoke(callee, args, e.span),
            ExprKind::SharedArray { elem, len } => self.shared_array(elem, len, e.span),
            ExprKind::GenericName { name, .. } => {
                self.error(
                    code::VARIABLE_NOT_FOUND,
                    e.span,
                    format!("'{}' is a type, not a value", name.name),
                );
                Val::error()
            }
            ExprKind::Postfix { op, operand } => {
                self.inc_dec(operand, *op == crate::ast::PostOp::Inc, false, e.span)
            }
            ExprKind::Cond { cond, then, els } => self.ternary(cond, then, els, e.span),
            ExprKind::ArrayLit(items) => self.array_literal(items, None, e.span),
            ExprKind::Switch { selector, arms } => self.switch_expr(selector, arms, e.span),
        }
    }

    fn int_lit(&mut self, mag: u64, non_decimal: bool, long: bool, neg: bool, span: Span) -> Val {
        let (value, s, untyped): (i128, Scalar, bool) = if long {
            // `L`: int64; hex/octal/binary up to 2^64-1 reinterpret in two's complement.
            let v: i128 = if non_decimal {
                mag as i64 as i128
            } else if mag > i64::MAX as u64 && !(neg && mag == 1u64 << 63) {
                self.error(code::SYNTAX, span, "integer literal out of range for int64");
                return Val::error();
            } else {
                mag as i128
            };
            (if neg { -v } else { v }, Scalar::I64, false)
        } else {
            if neg && mag > 1u64 << 63 {
                self.error(code::SYNTAX, span, "integer literal out of range");
                return Val::error();
            }
            let s = ty::int_literal_type(mag, neg);
            let v = if neg { -(mag as i128) } else { mag as i128 };
            (v, s, true)
        };
        Val {
            ty: Ty::Prim(s),
            loc: Loc::Num(Num::Int(value)),
            untyped,
            own: Own::No,
        }
    }

    // ----- names and fields -----

    fn name(&mut self, name: &str, span: Span) -> Val {
        if let Some(li) = self.lookup_local(name) {
            let l = &self.locals[li];
            let (ty, reg, da) = (l.ty.clone(), l.reg, l.da);
            if self.reachable && !self.da[da] {
                self.error(
                    code::VARIABLE_NOT_ASSIGNED,
                    span,
                    format!("variable '{name}' might not have been assigned"),
                );
            }
            return Val::reg(ty, reg);
        }
        if let Some(v) = self.class_member_value(self.class, name, span, true) {
            return v;
        }
        if self.p.is_ambiguous(self.unit, name) {
            self.error(
                code::UNRESOLVED_TYPE,
                span,
                format!("'{name}' is ambiguous: two wildcard imports supply it"),
            );
            return Val::error();
        }
        if builtins::later_tier_class(name) {
            self.error(
                code::NOT_IMPLEMENTED,
                span,
                builtins::later_tier(&format!("'{name}'")),
            );
            return Val::error();
        }
        self.error(
            code::VARIABLE_NOT_FOUND,
            span,
            format!("unknown name '{name}'{}", builtins::import_hint(name)),
        );
        Val::error()
    }

    /// A static field of `class` (or an instance field of `this` in constructors) as a value.
    fn class_member_value(
        &mut self,
        class: u32,
        name: &str,
        span: Span,
        implicit: bool,
    ) -> Option<Val> {
        let c = &self.p.classes[class as usize];
        if let Some(&si) = c
            .statics
            .iter()
            .find(|&&s| self.p.statics[s as usize].name == name)
        {
            let st = &self.p.statics[si as usize];
            let ty = st.ty.clone();
            self.check_access(st.access, st.class, span, name);
            if self.device {
                return Some(self.device_static(si, span));
            }
            // A constant (LANGUAGE §5.3: `static final` primitive with a constant initialiser)
            // is compiled as its value, like any literal.
            if let Some(v) = self.static_constant(si, span) {
                return Some(v);
            }
            let r = self.def(Op::GetStatic, ty.reg(), si as u16, 0);
            return Some(Val::reg(ty, r));
        }
        if implicit {
            if let Some(fi) = c.fields.iter().position(|f| f.name == name) {
                let ty = c.fields[fi].ty.clone();
                let Some(this) = self.this else {
                    self.error(
                        code::VARIABLE_NOT_FOUND,
                        span,
                        format!("instance field '{name}' used in a static context"),
                    );
                    return Some(Val::error());
                };
                self.set_pos(span);
                let r = self.def(Op::GetField, ty.reg(), this, fi as u16);
                return Some(Val::reg(ty, r));
            }
        }
        None
    }

    /// Reports `CAJETA_ERROR_METHOD_NOT_ACCESSIBLE` when a member is not visible here.
    pub fn check_access(&mut self, access: Access, owner: u32, span: Span, name: &str) {
        let ok = match access {
            Access::Public => true,
            Access::Private => owner == self.class,
            Access::Package => {
                self.p.classes[owner as usize].package
                    == self.p.classes[self.class as usize].package
            }
        };
        if !ok {
            self.error(
                code::METHOD_NOT_ACCESSIBLE,
                span,
                format!("'{name}' is not accessible here"),
            );
        }
    }

    /// Resolves an expression that names a class (`Foo`, `pkg.Foo`), if it does and is not
    /// shadowed by a variable.
    pub fn class_path(&self, e: &Expr) -> Option<ClassRef> {
        match &e.kind {
            ExprKind::Name(id) => {
                if self.lookup_local(&id.name).is_some() {
                    return None;
                }
                let c = &self.p.classes[self.class as usize];
                if c.statics
                    .iter()
                    .any(|&s| self.p.statics[s as usize].name == id.name)
                    || (self.this.is_some() && c.fields.iter().any(|f| f.name == id.name))
                {
                    return None;
                }
                self.p.lookup_class(self.unit, &id.name)
            }
            ExprKind::GenericName { name, .. } => self.p.lookup_class(self.unit, &name.name),
            ExprKind::Field { .. } => {
                let mut parts = vec![];
                let mut cur = e;
                loop {
                    match &cur.kind {
                        ExprKind::Field { target, name } => {
                            parts.push(name.name.clone());
                            cur = target;
                        }
                        ExprKind::Name(id) => {
                            if self.lookup_local(&id.name).is_some() {
                                return None;
                            }
                            parts.push(id.name.clone());
                            break;
                        }
                        _ => return None,
                    }
                }
                parts.reverse();
                self.p.lookup_qualified(&parts.join("."))
            }
            _ => None,
        }
    }

    fn field(&mut self, target: &Expr, name: &crate::ast::Ident, span: Span) -> Val {
        if let Some(v) = self.pod_field(target, name) {
            return v;
        }
        if let Some(cls) = self.class_path(target) {
            match cls {
                ClassRef::User(c) => {
                    if let Some(v) = self.class_member_value(c, &name.name, name.span, false) {
                        return v;
                    }
                    let cn = self.p.class_name(c).to_string();
                    self.error(
                        code::VARIABLE_NOT_FOUND,
                        name.span,
                        format!("'{cn}' has no static field '{}'", name.name),
                    );
                    return Val::error();
                }
                ClassRef::Lib(lib) => return self.lib_field(lib, name, target.span),
            }
        }
        let obj = self.expr(target);
        match obj.ty.clone() {
            Ty::Vector(..) => self.vector_field(obj, name),
            Ty::Class(c) => {
                let cls = &self.p.classes[c as usize];
                let Some(fi) = cls.fields.iter().position(|f| f.name == name.name) else {
                    if cls
                        .statics
                        .iter()
                        .any(|&s| self.p.statics[s as usize].name == name.name)
                    {
                        return self
                            .class_member_value(c, &name.name, name.span, false)
                            .unwrap_or_else(Val::error);
                    }
                    let cn = cls.qual.clone();
                    self.error(
                        code::VARIABLE_NOT_FOUND,
                        name.span,
                        format!("'{cn}' has no field '{}'", name.name),
                    );
                    return Val::error();
                };
                let (fty, access) = (cls.fields[fi].ty.clone(), cls.fields[fi].access);
                self.check_access(access, c, name.span, &name.name);
                let Some(r) = self.materialize(&obj) else {
                    return Val::error();
                };
                self.set_pos(span);
                let d = self.def(Op::GetField, fty.reg(), r, fi as u16);
                // `heap H().v`, `make().v`: the object is stored nowhere (§6.4).
                self.drop_at_end(obj);
                Val::reg(fty, d)
            }
            Ty::Error => Val::error(),
            Ty::Array(_) if name.name == "length" => {
                self.error(
                    code::VARIABLE_NOT_FOUND,
                    name.span,
                    "arrays have no 'length' field: use count()",
                );
                Val::error()
            }
            t => {
                let n = self.ty_name(&t);
                self.error(
                    code::VARIABLE_NOT_FOUND,
                    name.span,
                    format!("{n} has no field '{}'", name.name),
                );
                Val::error()
            }
        }
    }

    // ----- ownership -----

    /// `#v`: the value of `v` (a local, parameter or field), owned iff `v` owned it; `v`
    /// becomes a borrow.
    pub fn take_title(&mut self, e: &Expr, v: Val) -> Val {
        self.title_of(e, v, true)
    }

    /// `return v;` with `v` an owning local or parameter hands its title to the caller
    /// (LANGUAGE §6.3); a field keeps its own.
    pub fn take_local_title(&mut self, e: &Expr, v: Val) -> Val {
        self.title_of(e, v, false)
    }

    fn title_of(&mut self, e: &Expr, v: Val, fields: bool) -> Val {
        let inner = match &e.kind {
            ExprKind::Transfer(i) | ExprKind::Paren(i) => i,
            _ => e,
        };
        if let ExprKind::Name(id) = &inner.kind {
            if let Some(li) = self.lookup_local(&id.name) {
                if let Some(f) = self.locals[li].flag {
                    self.locals[li].static_owner = false;
                    let t = self.temp(Type::BOOL);
                    self.emit(Op::Mov, t, f, 0);
                    self.emit_bc(Op::LoadI, f, 0);
                    return Val {
                        own: Own::Dyn(t),
                        ..v
                    };
                }
            }
        }
        if fields && names_a_variable(inner) {
            if let Some(t) = self.take_field_flag(inner) {
                return Val {
                    own: Own::Dyn(t),
                    ..v
                };
            }
        }
        Val { own: Own::No, ..v }
    }

    /// The title of the field `e` names (a bare field name, `this.f`, `Cls.f`, `x.f`, whose
    /// value has just been read): its owns-flag, read into a temporary, and then cleared —
    /// `#f` turns the field into a borrow (LANGUAGE §6.3). `None` if `e` is no field of an
    /// owned kind.
    fn take_field_flag(&mut self, e: &Expr) -> Option<Reg> {
        let (obj, class, name) = match &e.kind {
            ExprKind::Name(id) if self.lookup_local(&id.name).is_none() => {
                (None, self.class, id.name.as_str())
            }
            ExprKind::Field { target, name } => match self.class_path(target) {
                Some(ClassRef::User(c)) => (None, c, name.name.as_str()),
                Some(ClassRef::Lib(_)) => return None,
                None => {
                    // The receiver is a chain of names: reading it again has no effect.
                    let obj = self.expr(target);
                    let Ty::Class(c) = obj.ty else {
                        return None;
                    };
                    (Some(self.materialize(&obj)?), c, name.name.as_str())
                }
            },
            _ => return None,
        };
        let c = &self.p.classes[class as usize];
        let own_name = format!("$own.{name}");
        if let Some(&si) = c
            .statics
            .iter()
            .find(|&&s| self.p.statics[s as usize].name == name)
        {
            let flag = self.static_flag(si)?;
            let t = self.temp(Type::BOOL);
            self.emit(Op::GetStatic, t, flag as u16, 0);
            let no = self.load_bool(false);
            self.emit(Op::SetStatic, no, flag as u16, 0);
            return Some(t);
        }
        let flag = c.fields.iter().position(|f| f.name == own_name)? as u16;
        let obj = match obj {
            Some(r) => r,
            None => self.this?,
        };
        let t = self.temp(Type::BOOL);
        self.emit(Op::GetField, t, obj, flag);
        let no = self.load_bool(false);
        self.emit(Op::SetField, obj, flag, no);
        Some(t)
    }

    /// Stores a value into a local (initialisation or assignment), handling the owns-flag and
    /// the drop of the overwritten object (LANGUAGE §6.3).
    pub fn store_local(&mut self, li: usize, v: Val, span: Span, init: bool) -> Option<Reg> {
        self.store_local_at(li, v, span, span, init)
    }

    /// [`FnBuilder::store_local`] reporting a `final` violation at `at` (the assignment).
    pub fn store_local_at(
        &mut self,
        li: usize,
        v: Val,
        span: Span,
        at: Span,
        init: bool,
    ) -> Option<Reg> {
        let l = self.locals[li].clone();
        if let Some(u) = l.unassigned {
            self.check_final_unassigned(&format!("variable '{}'", l.name), l.da, u, at);
        }
        let own = v.own;
        let r = self.coerce(v, &l.ty, span)?;
        self.locals[li].static_owner = own != Own::No;
        if let Ty::Vector(_, n) = l.ty {
            // Every lane; the value is always a block distinct from the local's.
            self.vec_copy(l.reg, r, n as usize);
        } else if let Some(f) = l.flag {
            // Drop the old object after the right side is evaluated, before the store.
            if !init {
                self.emit_drop(l.reg, f, &l.ty);
            }
            self.move_into(l.reg, r);
            match own {
                Own::No => {
                    self.emit_bc(Op::LoadI, f, 0);
                }
                Own::Yes => {
                    self.emit_bc(Op::LoadI, f, 1);
                }
                Own::Dyn(o) => {
                    self.emit(Op::Mov, f, o, 0);
                }
            }
        } else {
            self.move_into(l.reg, r);
        }
        self.mark_assigned(li);
        self.locals[li].assigned_at = Some(at);
        Some(l.reg)
    }

    // ----- operators -----

    fn unary(&mut self, op: UnOp, operand: &Expr, span: Span) -> Val {
        if matches!(op, UnOp::PreInc | UnOp::PreDec) {
            return self.inc_dec(operand, op == UnOp::PreInc, true, span);
        }
        let v = self.expr(operand);
        if self.void_value(&v, operand.span) {
            return Val::error();
        }
        if let Ty::Vector(..) = v.ty {
            return self.vector_unary(op, v, span);
        }
        match (op, v.ty.clone()) {
            (_, Ty::Error) => Val::error(),
            (UnOp::Not, Ty::Prim(Scalar::Bool)) => self.not_val(v, span),
            (UnOp::Plus, Ty::Prim(s)) if s.is_half() && v.num().is_none() => {
                // Unary plus on float16/bfloat16 gives float32 (§3.4).
                let Some(r) = self.materialize(&v) else {
                    return Val::error();
                };
                Val::reg(Ty::Prim(Scalar::F32), self.convert(r, s, Scalar::F32))
            }
            (UnOp::Plus, Ty::Prim(s)) if s.is_numeric() => Val {
                untyped: false,
                ..v
            },
            (UnOp::Neg, Ty::Prim(s)) if s.is_numeric() => {
                if let Some(n) = v.num_exact() {
                    let bits = ty::const_cell(n, s);
                    let folded = match n {
                        Num::Float(f) => Num::Float(-f),
                        Num::Dec(f, dir) => Num::Dec(-f, -dir),
                        Num::Int(_) => {
                            ty::cell_num(ty::canon((bits as i64).wrapping_neg() as u64, s), s)
                        }
                    };
                    return Val {
                        ty: Ty::Prim(s),
                        loc: Loc::Num(folded),
                        untyped: false,
                        own: Own::No,
                    };
                }
                let Some(r) = self.materialize(&v) else {
                    return Val::error();
                };
                self.set_pos(span);
                // Unary minus on float16/bfloat16 gives float32 (§3.4).
                let (r, s) = if s.is_half() {
                    (self.convert(r, s, Scalar::F32), Scalar::F32)
                } else {
                    (r, s)
                };
                let d = self.def(typed_op("neg", s).expect("neg"), Type::Scalar(s), r, 0);
                Val::reg(Ty::Prim(s), d)
            }
            (UnOp::BitNot, Ty::Prim(s)) if s.is_int() => {
                if let Some(Num::Int(i)) = v.num() {
                    let bits = ty::canon(!ty::int_cell(i, s), s);
                    return Val {
                        ty: Ty::Prim(s),
                        loc: Loc::Num(ty::cell_num(bits, s)),
                        untyped: false,
                        own: Own::No,
                    };
                }
                let Some(r) = self.materialize(&v) else {
                    return Val::error();
                };
                let d = self.def(typed_op("not", s).expect("not"), Type::Scalar(s), r, 0);
                Val::reg(Ty::Prim(s), d)
            }
            (_, t) => {
                let n = self.ty_name(&t);
                let sym = match op {
                    UnOp::Not => "!",
                    UnOp::BitNot => "~",
                    UnOp::Neg => "-",
                    _ => "+",
                };
                self.error(
                    code::TYPE_MISMATCH,
                    span,
                    format!("operator '{sym}' cannot be applied to {n}"),
                );
                Val::error()
            }
        }
    }

    /// `!v` for a boolean value (errors for others).
    fn not_val(&mut self, v: Val, span: Span) -> Val {
        match v.ty {
            Ty::Prim(Scalar::Bool) => {
                if let Loc::Bool(b) = v.loc {
                    return Val {
                        loc: Loc::Bool(!b),
                        ..v
                    };
                }
                let Some(r) = self.materialize(&v) else {
                    return Val::error();
                };
                let d = self.def(Op::LNot, Type::BOOL, r, 0);
                Val::reg(Ty::BOOL, d)
            }
            Ty::Error => Val::error(),
            ref t => {
                let n = self.ty_name(t);
                self.error(
                    code::TYPE_MISMATCH,
                    span,
                    format!("operator '!' cannot be applied to {n}"),
                );
                Val::error()
            }
        }
    }

    /// The operand type an untyped constant adopts next to an operand of type `other`
    /// (LANGUAGE §3.3).
    pub(super) fn adopt(v: &Val, other: Scalar) -> Scalar {
        let own = v.ty.scalar().unwrap_or(Scalar::I32);
        match v.num() {
            Some(Num::Int(i)) if v.untyped && other.is_numeric() && ty::int_fits(i, other) => other,
            Some(Num::Float(_)) if v.untyped && other.is_float() => other,
            _ => own,
        }
    }

    fn binary(&mut self, op: BinOp, lhs: &Expr, rhs: &Expr, span: Span) -> Val {
        if matches!(op, BinOp::And | BinOp::Or) {
            return self.short_circuit(op, lhs, rhs).0;
        }
        let l = self.expr(lhs);
        let l = self.pin(l, &[rhs]);
        let r = self.expr(rhs);
        // A void call used as an operand: point at the call itself.
        for (v, e) in [(&l, lhs), (&r, rhs)] {
            if v.ty == Ty::Void {
                self.error(
                    code::UNRESOLVED_EXPRESSION,
                    e.span,
                    "a void call has no value",
                );
                return Val::error();
            }
        }
        self.binary_vals(op, l, r, span)
    }

    /// Applies a binary operator to two lowered operands.
    pub fn binary_vals(&mut self, op: BinOp, l: Val, r: Val, span: Span) -> Val {
        if l.ty == Ty::Error || r.ty == Ty::Error {
            return Val::error();
        }
        if l.ty == Ty::Void || r.ty == Ty::Void {
            self.error(
                code::UNRESOLVED_EXPRESSION,
                span,
                "a void call has no value",
            );
            return Val::error();
        }
        if matches!(l.ty, Ty::Vector(..)) || matches!(r.ty, Ty::Vector(..)) {
            return self.vector_binary(op, l, r, span);
        }
        if op == BinOp::Add && (l.ty == Ty::Str || r.ty == Ty::Str) {
            return self.concat(l, r, span);
        }
        if matches!(op, BinOp::Eq | BinOp::Ne) {
            if let Some(v) = self.equality(op, &l, &r, span) {
                return v;
            }
        }
        let (Some(ls), Some(rs)) = (l.ty.scalar(), r.ty.scalar()) else {
            return self.mismatch(op, &l, &r, span);
        };
        if ls == Scalar::Bool
            && rs == Scalar::Bool
            && matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor)
        {
            let name = match op {
                BinOp::BitAnd => "and",
                BinOp::BitOr => "or",
                _ => "xor",
            };
            let (Some(a), Some(b)) = (self.materialize(&l), self.materialize(&r)) else {
                return Val::error();
            };
            let d = self.def(
                typed_op(name, Scalar::Bool).expect("bool op"),
                Type::BOOL,
                a,
                b,
            );
            return Val::reg(Ty::BOOL, d);
        }
        if !ls.is_numeric() || !rs.is_numeric() {
            return self.mismatch(op, &l, &r, span);
        }
        // Untyped constants adopt the other operand's type.
        let (lt, rt) = match (l.untyped, r.untyped) {
            (true, false) => (Self::adopt(&l, rs), rs),
            (false, true) => (ls, Self::adopt(&r, ls)),
            _ => (ls, rs),
        };
        if matches!(op, BinOp::Shl | BinOp::Shr | BinOp::Ushr) {
            return self.shift(op, l, r, lt, rt, span);
        }
        let p = ty::promote(lt, rt);
        let any_unsigned = (lt.is_int() && !lt.is_signed()) || (rt.is_int() && !rt.is_signed());
        let any_signed = lt.is_signed() || rt.is_signed();
        match op {
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor if !p.is_int() => {
                self.mismatch(op, &l, &r, span)
            }
            BinOp::Add
            | BinOp::Sub
            | BinOp::Mul
            | BinOp::Div
            | BinOp::Rem
            | BinOp::BitAnd
            | BinOp::BitOr
            | BinOp::BitXor => {
                // Division is unsigned if either operand type is unsigned (LANGUAGE §4).
                let work = if matches!(op, BinOp::Div | BinOp::Rem)
                    && p.is_int()
                    && p.is_signed()
                    && any_unsigned
                {
                    unsigned_of(p)
                } else {
                    p
                };
                if let (Some(a), Some(b)) = (l.num(), r.num()) {
                    if let Some(v) = fold_arith(op, a, lt, b, rt, work, p) {
                        return Val {
                            ty: Ty::Prim(p),
                            loc: Loc::Num(v),
                            untyped: false,
                            own: Own::No,
                        };
                    }
                }
                if matches!(op, BinOp::Add | BinOp::Sub)
                    && matches!(work, Scalar::I32 | Scalar::I64)
                {
                    if let Some(Num::Int(k)) = r.num() {
                        let k = if op == BinOp::Sub { -k } else { k };
                        if (-32768..=32767).contains(&k) && !r.ty.is_numeric()
                            || (-32768..=32767).contains(&k) && rt.is_int()
                        {
                            let Some(a) = self.operand(&l, lt, work) else {
                                return Val::error();
                            };
                            let opc = if work == Scalar::I32 {
                                Op::AddImmI32
                            } else {
                                Op::AddImmI64
                            };
                            let d = self.def(opc, Type::Scalar(work), a, k as i16 as u16);
                            return Val::reg(Ty::Prim(p), d);
                        }
                    }
                }
                let (Some(a), Some(b)) = (self.operand(&l, lt, work), self.operand(&r, rt, work))
                else {
                    return Val::error();
                };
                let name = match op {
                    BinOp::Add => "add",
                    BinOp::Sub => "sub",
                    BinOp::Mul => "mul",
                    BinOp::Div => "div",
                    BinOp::Rem => "rem",
                    BinOp::BitAnd => "and",
                    BinOp::BitOr => "or",
                    _ => "xor",
                };
                if matches!(op, BinOp::Div | BinOp::Rem)
                    && p.is_int()
                    && lt.is_int()
                    && rt.is_int()
                    && any_signed
                    && any_unsigned
                {
                    self.warn(
                        code::WARN_MIXED_SIGNEDNESS,
                        span,
                        "division mixes signed and unsigned operands",
                    );
                }
                self.set_pos(span);
                let d = self.def(
                    typed_op(name, work).expect("arith op"),
                    Type::Scalar(work),
                    a,
                    b,
                );
                if work != p {
                    let c = self.convert(d, work, p);
                    return Val::reg(Ty::Prim(p), c);
                }
                Val::reg(Ty::Prim(p), d)
            }
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne => {
                // Integer comparisons are signed if either original operand is signed.
                let work = if p.is_int()
                    && !p.is_signed()
                    && any_signed
                    && matches!(op, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
                {
                    signed_of(p)
                } else {
                    p
                };
                if p.is_int() && any_signed && any_unsigned && !matches!(op, BinOp::Eq | BinOp::Ne)
                {
                    self.warn(
                        code::WARN_MIXED_SIGNEDNESS,
                        span,
                        "comparison mixes signed and unsigned operands",
                    );
                }
                if let (Some(a), Some(b)) = (l.num(), r.num()) {
                    let (x, y) = (
                        ty::cell_num(ty::const_cell(a, work), work),
                        ty::cell_num(ty::const_cell(b, work), work),
                    );
                    if let Some(res) = fold_cmp(op, x, y) {
                        return Val {
                            ty: Ty::BOOL,
                            loc: Loc::Bool(res),
                            untyped: false,
                            own: Own::No,
                        };
                    }
                }
                let (Some(a), Some(b)) = (self.operand(&l, lt, work), self.operand(&r, rt, work))
                else {
                    return Val::error();
                };
                let (name, x, y) = match op {
                    BinOp::Lt => ("lt", a, b),
                    BinOp::Le => ("le", a, b),
                    BinOp::Gt => ("lt", b, a),
                    BinOp::Ge => ("le", b, a),
                    BinOp::Eq => ("eq", a, b),
                    _ => ("ne", a, b),
                };
                let d = self.def(typed_op(name, work).expect("cmp op"), Type::BOOL, x, y);
                Val::reg(Ty::BOOL, d)
            }
            _ => self.mismatch(op, &l, &r, span),
        }
    }

    /// Materialises an operand of (adopted) type `t` converted to `work`.
    fn operand(&mut self, v: &Val, t: Scalar, work: Scalar) -> Option<Reg> {
        if let Some(n) = v.num_exact() {
            let cell = ty::const_cell(n, t);
            let cell = ty::const_cell(ty::cell_num(cell, t), work);
            return Some(self.load_bits(Type::Scalar(work), cell));
        }
        let r = self.materialize(v)?;
        let from = v.ty.scalar()?;
        Some(self.convert(r, from, work))
    }

    fn shift(&mut self, op: BinOp, l: Val, r: Val, lt: Scalar, rt: Scalar, span: Span) -> Val {
        if !lt.is_int() || !rt.is_int() {
            return self.mismatch(op, &l, &r, span);
        }
        // The result has the left operand's type; an untyped left constant adopts a typed
        // right operand's type (§4), but two untyped constants keep their own (§3.3).
        let res = if l.untyped && !r.untyped {
            Self::adopt(&l, rt)
        } else {
            lt
        };
        let name = match op {
            BinOp::Shl => "shl",
            BinOp::Shr => "shr",
            _ => "ushr",
        };
        // Constant operands fold, so that `uint32 a = 1 << 20;` is a constant (§5.3) and
        // converts without a lossy-conversion warning when it fits.
        if let (Some(Num::Int(a)), Some(Num::Int(b))) = (l.num(), r.num()) {
            let x = ty::const_cell(ty::cell_num(ty::const_cell(Num::Int(a), lt), lt), res);
            let amount = (ty::const_cell(Num::Int(b), rt) as u32) & (res.bits() - 1);
            let shifted = match op {
                BinOp::Shl => x << amount,
                BinOp::Shr if res.is_signed() => ((x as i64) >> amount) as u64,
                // `>>>` and `>>` of an unsigned value: zeros in from the type's width.
                _ => (x & (u64::MAX >> (64 - res.bits()))) >> amount,
            };
            return Val {
                ty: Ty::Prim(res),
                loc: Loc::Num(ty::cell_num(ty::canon(shifted, res), res)),
                untyped: false,
                own: Own::No,
            };
        }
        let (Some(a), Some(b)) = (self.operand(&l, lt, res), self.operand(&r, rt, rt)) else {
            return Val::error();
        };
        let d = self.def(
            typed_op(name, res).expect("shift op"),
            Type::Scalar(res),
            a,
            b,
        );
        Val::reg(Ty::Prim(res), d)
    }

    fn mismatch(&mut self, op: BinOp, l: &Val, r: &Val, span: Span) -> Val {
        let (a, b) = (self.ty_name(&l.ty), self.ty_name(&r.ty));
        self.error(
            code::TYPE_MISMATCH,
            span,
            format!(
                "operator '{}' cannot be applied to {a} and {b}",
                op.symbol()
            ),
        );
        Val::error()
    }

    fn equality(&mut self, op: BinOp, l: &Val, r: &Val, span: Span) -> Option<Val> {
        let ne = op == BinOp::Ne;
        let result = |this: &mut Self, d: Reg| {
            if ne {
                let n = this.def(Op::LNot, Type::BOOL, d, 0);
                Val::reg(Ty::BOOL, n)
            } else {
                Val::reg(Ty::BOOL, d)
            }
        };
        match (&l.ty, &r.ty) {
            (Ty::Prim(a), Ty::Prim(b)) if a == b && matches!(a, Scalar::Bool | Scalar::Char) => {
                let (x, y) = (self.materialize(l)?, self.materialize(r)?);
                let name = if ne { "ne" } else { "eq" };
                let d = self.def(typed_op(name, *a).expect("eq"), Type::BOOL, x, y);
                Some(Val::reg(Ty::BOOL, d))
            }
            (Ty::Str, Ty::Str) | (Ty::Str, Ty::Null) | (Ty::Null, Ty::Str) => {
                let (x, y) = (self.str_reg(l)?, self.str_reg(r)?);
                let d = self.def(Op::EqStr, Type::BOOL, x, y);
                Some(result(self, d))
            }
            (Ty::Enum(a), Ty::Enum(b)) if a == b => {
                if let (Loc::Enum(x), Loc::Enum(y)) = (&l.loc, &r.loc) {
                    return Some(Val {
                        ty: Ty::BOOL,
                        loc: Loc::Bool((x == y) != ne),
                        untyped: false,
                        own: Own::No,
                    });
                }
                let (x, y) = (self.materialize(l)?, self.materialize(r)?);
                let name = if ne { "ne" } else { "eq" };
                let d = self.def(typed_op(name, Scalar::I32).expect("eq"), Type::BOOL, x, y);
                Some(Val::reg(Ty::BOOL, d))
            }
            (Ty::Null, Ty::Null) => Some(Val {
                ty: Ty::BOOL,
                loc: Loc::Bool(!ne),
                untyped: false,
                own: Own::No,
            }),
            (a, b) if a.is_ref() && b.is_ref() && (a == b || *a == Ty::Null || *b == Ty::Null) => {
                let t = if *a == Ty::Null { b.reg() } else { a.reg() };
                let x = self.ref_reg(l, t)?;
                let y = self.ref_reg(r, t)?;
                let d = self.def(Op::EqRef, Type::BOOL, x, y);
                // `heap T() == null`, `make() != x`: an operand is stored nowhere (§6.4).
                self.drop_at_end(l.clone());
                self.drop_at_end(r.clone());
                Some(result(self, d))
            }
            (Ty::Prim(a), Ty::Prim(b)) if a.is_numeric() && b.is_numeric() => None,
            _ => Some(self.mismatch(op, l, r, span)),
        }
    }

    fn ref_reg(&mut self, v: &Val, t: Type) -> Option<Reg> {
        if v.ty == Ty::Null {
            let r = self.temp(t);
            self.emit(Op::LoadNull, r, 0, 0);
            return Some(r);
        }
        self.materialize(v)
    }

    fn str_reg(&mut self, v: &Val) -> Option<Reg> {
        self.ref_reg(v, Type::Str)
    }

    fn short_circuit(&mut self, op: BinOp, lhs: &Expr, rhs: &Expr) -> (Val, Vec<bool>, Vec<bool>) {
        let bad = |this: &mut Self, v: &Val, span: Span| {
            if v.ty != Ty::Error && !this.void_value(v, span) {
                let n = this.ty_name(&v.ty);
                this.error(
                    code::TYPE_MISMATCH,
                    span,
                    format!(
                        "operator '{}' needs boolean operands, found {n}",
                        op.symbol()
                    ),
                );
            }
            let d = this.da.clone();
            (Val::error(), d.clone(), d)
        };
        let (l, lt, lf) = self.bool_expr(lhs);
        if l.ty != Ty::BOOL {
            return bad(self, &l, lhs.span);
        }
        let Some(a) = self.materialize(&l) else {
            return bad(self, &Val::error(), lhs.span);
        };
        let d = self.temp(Type::BOOL);
        self.emit(Op::Mov, d, a, 0);
        let j = if op == BinOp::And {
            self.emit_bc(Op::JmpIfNot, d, 0)
        } else {
            self.emit_bc(Op::JmpIf, d, 0)
        };
        let header = j as u32;
        // The right operand runs only when the left one is true (`&&`) or false (`||`).
        self.da = if op == BinOp::And {
            lt.clone()
        } else {
            lf.clone()
        };
        self.enter_conditional();
        let (r, rt, rf) = self.bool_expr(rhs);
        if r.ty != Ty::BOOL {
            self.leave_conditional();
            return bad(self, &r, rhs.span);
        }
        if let Some(b) = self.materialize(&r) {
            self.emit(Op::Mov, d, b, 0);
        }
        // The path that skips the right operand clears its drop flags.
        let flags = self.leave_conditional();
        let j = self.clearing_edge(j, &flags);
        let merge = self.pc();
        self.patch(j, merge);
        self.region(cajeta_bytecode::RegionKind::If, header, 0, merge);
        let and = |x: &[bool], y: &[bool]| {
            x.iter()
                .zip(y)
                .map(|(a, b)| *a && *b)
                .collect::<Vec<bool>>()
        };
        let (t, f) = if op == BinOp::And {
            (rt, and(&lf, &rf))
        } else {
            (and(&lt, &rt), rf)
        };
        self.da = and(&t, &f);
        (Val::reg(Ty::BOOL, d), t, f)
    }

    /// The name of the constant of enum `e` whose ordinal is in register `r` (§3.5): a chain
    /// of tests, the last constant where none holds (the library enums have at most five).
    fn enum_name(&mut self, e: ty::EnumTy, r: Reg) -> Reg {
        let names = e.constants();
        let d = self.temp(Type::Str);
        let last = self.load_str(names[names.len() - 1]);
        self.emit(Op::Mov, d, last, 0);
        for (o, name) in names.iter().enumerate().take(names.len() - 1) {
            let k = self.load_bits(Type::I32, o as u64);
            let b = self.temp(Type::BOOL);
            self.emit(Op::EqI32, b, r, k);
            let j = self.emit_bc(Op::JmpIfNot, b, 0);
            let s = self.load_str(name);
            self.emit(Op::Mov, d, s, 0);
            let merge = self.pc();
            self.patch(j, merge);
            self.region(cajeta_bytecode::RegionKind::If, j as u32, 0, merge);
        }
        d
    }

    /// String conversion of a value (LANGUAGE §3.5) into a String register.
    pub fn stringify(&mut self, v: &Val, span: Span) -> Option<Reg> {
        match (&v.ty, &v.loc) {
            (Ty::Str, _) => self.str_reg(v),
            (Ty::Null, _) => Some(self.load_str("null")),
            (Ty::Enum(e), Loc::Enum(o)) => Some(self.load_str(e.constants()[*o as usize])),
            (Ty::Enum(e), Loc::Reg(r)) => Some(self.enum_name(*e, *r)),
            (Ty::Prim(s), _) => {
                let r = self.materialize(v)?;
                // float16/bfloat16 print as their exact float32 widening (§3.6).
                let (r, s) = if s.is_half() {
                    (self.convert(r, *s, Scalar::F32), Scalar::F32)
                } else {
                    (r, *s)
                };
                let d = self.def(typed_op("tostr", s).expect("tostr"), Type::Str, r, 0);
                Some(d)
            }
            (Ty::Error, _) => None,
            (Ty::Void, _) => {
                self.error(
                    code::UNRESOLVED_EXPRESSION,
                    span,
                    "a void call has no value",
                );
                None
            }
            (t, _) => {
                let n = self.ty_name(t);
                self.error(
                    code::TYPE_MISMATCH,
                    span,
                    format!("{n} has no string conversion"),
                );
                None
            }
        }
    }

    fn concat(&mut self, l: Val, r: Val, span: Span) -> Val {
        // Fold constant strings so `"a" + 1 + "b"` needs no runtime work.
        if let (Some(a), Some(b)) = (const_string(&l), const_string(&r)) {
            return Val {
                ty: Ty::Str,
                loc: Loc::Str(a + &b),
                untyped: false,
                own: Own::No,
            };
        }
        let (Some(a), Some(b)) = (self.stringify(&l, span), self.stringify(&r, span)) else {
            return Val::error();
        };
        let d = self.def(Op::Concat, Type::Str, a, b);
        Val::reg(Ty::Str, d)
    }

    fn cast(&mut self, t: &crate::ast::TypeExpr, e: &Expr, span: Span) -> Val {
        let target = match self.p.resolve_type(self.unit, t) {
            Ok(t) => t,
            Err(d) => {
                self.diags.push(d);
                return Val::error();
            }
        };
        let v = self.expr(e);
        if v.ty == Ty::Error || self.void_value(&v, e.span) {
            return Val::error();
        }
        // §3.1: `T` primitive; anything else, an array type too (even the operand's own:
        // a reference cast, T3), is a mismatch.
        let (Some(from), Ty::Prim(to)) = (v.ty.scalar(), target.clone()) else {
            let (a, b) = (self.ty_name(&v.ty), self.ty_name(&target));
            self.error(code::TYPE_MISMATCH, span, format!("cannot cast {a} to {b}"));
            return Val::error();
        };
        let ok = from == to
            || (from.is_numeric() && to.is_numeric())
            || (from == Scalar::Char && to.is_int())
            || (from.is_int() && to == Scalar::Char);
        if !ok {
            let (a, b) = (self.ty_name(&v.ty), self.ty_name(&target));
            self.error(code::TYPE_MISMATCH, span, format!("cannot cast {a} to {b}"));
            return Val::error();
        }
        match v.loc {
            Loc::Num(n) if to.is_numeric() => {
                let cell = ty::const_cell(n, to);
                Val {
                    ty: Ty::Prim(to),
                    loc: Loc::Num(ty::cell_num(cell, to)),
                    untyped: false,
                    own: Own::No,
                }
            }
            Loc::Num(Num::Int(i)) if to == Scalar::Char => Val {
                ty: Ty::Prim(to),
                loc: Loc::Char(i as u32),
                untyped: false,
                own: Own::No,
            },
            Loc::Char(c) if to.is_int() => {
                let cell = ty::const_cell(Num::Int(c as i128), to);
                Val {
                    ty: Ty::Prim(to),
                    loc: Loc::Num(ty::cell_num(cell, to)),
                    untyped: false,
                    own: Own::No,
                }
            }
            _ => {
                let Some(r) = self.materialize(&v) else {
                    return Val::error();
                };
                let mut d = self.convert(r, from, to);
                if (from, to) == (Scalar::U64, Scalar::I64) {
                    // The cast's value is signed: a copy, so that an index error does not
                    // read it as an index's own conversion of a uint64, which prints
                    // unsigned (`Function::index_holds_u64`).
                    d = self.def(Op::Mov, Type::Scalar(to), d, 0);
                }
                Val::reg(Ty::Prim(to), d)
            }
        }
    }

    // ----- assignment -----

    pub(super) fn place(&mut self, target: &Expr) -> Option<Place> {
        self.place_at(target, target.span)
    }

    /// [`Self::place`], reporting an assignment to a final field at `at` (the construct's
    /// first character: the `++` of `++this.f`).
    pub(super) fn place_at(&mut self, target: &Expr, at: Span) -> Option<Place> {
        if let Some(lane) = self.vector_place(target) {
            return lane;
        }
        match &target.kind {
            ExprKind::Paren(inner) => self.place_at(inner, at),
            ExprKind::Name(id) => {
                if let Some(li) = self.lookup_local(&id.name) {
                    return Some(Place::Local(li));
                }
                let c = &self.p.classes[self.class as usize];
                if let Some(&si) = c
                    .statics
                    .iter()
                    .find(|&&s| self.p.statics[s as usize].name == id.name)
                {
                    return Some(Place::Static(si));
                }
                if let Some(fi) = c.fields.iter().position(|f| f.name == id.name) {
                    let ty = c.fields[fi].ty.clone();
                    if c.fields[fi].is_final {
                        self.check_final_field(self.class, &id.name, at);
                    }
                    if let Some(this) = self.this {
                        return Some(Place::Field {
                            obj: this,
                            field: fi as u16,
                            ty,
                        });
                    }
                }
                self.error(
                    code::VARIABLE_NOT_FOUND,
                    target.span,
                    format!(
                        "unknown name '{}'{}",
                        id.name,
                        builtins::import_hint(&id.name)
                    ),
                );
                None
            }
            ExprKind::Field { target: obj, name } => {
                if let ExprKind::Name(id) = &obj.kind {
                    if self
                        .lookup_local(&id.name)
                        .is_some_and(|li| self.locals[li].pod.is_some())
                    {
                        self.error(
                            code::XPU_N01,
                            target.span,
                            "the fields of a POD kernel parameter are read-only",
                        );
                        return None;
                    }
                }
                if let Some(ClassRef::User(c)) = self.class_path(obj) {
                    let cls = &self.p.classes[c as usize];
                    if let Some(&si) = cls
                        .statics
                        .iter()
                        .find(|&&s| self.p.statics[s as usize].name == name.name)
                    {
                        let access = self.p.statics[si as usize].access;
                        self.check_access(access, c, name.span, &name.name);
                        return Some(Place::Static(si));
                    }
                    let cn = cls.qual.clone();
                    self.error(
                        code::VARIABLE_NOT_FOUND,
                        name.span,
                        format!("'{cn}' has no static field '{}'", name.name),
                    );
                    return None;
                }
                let o = self.expr(obj);
                match o.ty.clone() {
                    Ty::Class(c) => {
                        let cls = &self.p.classes[c as usize];
                        let Some(fi) = cls.fields.iter().position(|f| f.name == name.name) else {
                            let cn = cls.qual.clone();
                            self.error(
                                code::VARIABLE_NOT_FOUND,
                                name.span,
                                format!("'{cn}' has no field '{}'", name.name),
                            );
                            return None;
                        };
                        let (ty, access, is_final) = (
                            cls.fields[fi].ty.clone(),
                            cls.fields[fi].access,
                            cls.fields[fi].is_final,
                        );
                        self.check_access(access, c, name.span, &name.name);
                        if is_final {
                            // The object being constructed only: `this.f`, not `other.f`.
                            let this = matches!(obj.kind, ExprKind::This);
                            let c = if this { c } else { u32::MAX };
                            self.check_final_field(c, &name.name, at);
                        }
                        let r = self.materialize(&o)?;
                        self.store_base_drops(o);
                        Some(Place::Field {
                            obj: r,
                            field: fi as u16,
                            ty,
                        })
                    }
                    Ty::Error => None,
                    t => {
                        let n = self.ty_name(&t);
                        self.error(
                            code::VARIABLE_NOT_FOUND,
                            name.span,
                            format!("{n} has no field '{}'", name.name),
                        );
                        None
                    }
                }
            }
            ExprKind::Index { target: arr, index } => {
                let a = self.expr(arr);
                let elem = match &a.ty {
                    Ty::Array(e) => (**e).clone(),
                    Ty::Error => return None,
                    Ty::Buffer(s) | Ty::Shared(s) if self.device => {
                        let s = *s;
                        let base = self.materialize(&a)?;
                        let idx = self.device_elem_index(index)?;
                        return Some(Place::Dev { base, idx, elem: s });
                    }
                    Ty::Buffer(_) => {
                        self.error(
                            code::XPU_K04,
                            target.span,
                            "buffer elements can only be accessed in @Kernel or @Device code",
                        );
                        return None;
                    }
                    t => {
                        let n = self.ty_name(t);
                        self.error(
                            code::TYPE_MISMATCH,
                            target.span,
                            format!("{n} cannot be indexed"),
                        );
                        return None;
                    }
                };
                let ar = self.materialize(&a)?;
                let idx = self.index_reg(index)?;
                self.store_base_drops(a);
                Some(Place::Elem { arr: ar, idx, elem })
            }
            _ => {
                self.error(code::SYNTAX, target.span, "not an assignable target");
                None
            }
        }
    }

    /// The object a store goes into, when it is stored nowhere (`heap P().f = v`,
    /// `make()[0] = v`): it drops at the end of the full expression, after the store
    /// (LANGUAGE §6.4). Outside a full expression (a field initialiser) it is left alone
    /// rather than dropped before the store.
    fn store_base_drops(&mut self, base: Val) {
        if !self.full_exprs.is_empty() {
            self.drop_at_end(base);
        }
    }

    /// LANGUAGE §5.3: a final instance field of class `c` is assigned only by its initialiser
    /// or a constructor of `c`, in the object it constructs (field initialisers are lowered
    /// into the constructors); `c` is `u32::MAX` for a field of another object.
    fn check_final_field(&mut self, c: u32, name: &str, at: Span) {
        let in_ctor = matches!(self.job.kind, super::collect::JobKind::Ctor(_));
        // One with an initialiser is assigned by it alone, as a `static final` with one is
        // (spec-questions 34).
        let initialised = c == self.class
            && self
                .field_declarator(c, name, false)
                .is_some_and(|(_, init)| init.is_some());
        if !(in_ctor && c == self.class) || initialised {
            self.error(
                code::FINAL_ASSIGNMENT,
                at,
                format!("final field '{name}' cannot be assigned here"),
            );
        } else {
            self.final_field_assigned(false, name, at);
        }
    }

    /// Starts tracking the final fields of this class that its code assigns: the instance
    /// ones without an initialiser in a constructor, the static ones in the class initialiser
    /// (`statics`). Each is assigned once, where it is definitely unassigned (LANGUAGE §5.3:
    /// "assigned only by …", read with §7's rule for final locals, as Java does); after
    /// `this(…)` (`chained`) the chosen constructor has assigned them all.
    pub(super) fn track_final_fields(&mut self, statics: bool, chained: bool) {
        let c = self.class;
        let names: Vec<String> = if statics {
            self.p.classes[c as usize]
                .statics
                .iter()
                .filter(|&&si| {
                    self.p.statics[si as usize].is_final && self.static_initialiser(si).is_none()
                })
                .map(|&si| self.p.statics[si as usize].name.clone())
                .collect()
        } else {
            self.p.classes[c as usize]
                .fields
                .iter()
                .filter(|f| f.is_final)
                .filter(|f| {
                    self.field_declarator(c, &f.name, false)
                        .is_some_and(|(_, init)| init.is_none())
                })
                .map(|f| f.name.clone())
                .collect()
        };
        for name in names {
            let assigned = self.da.len();
            self.da.push(chained);
            self.da.push(!chained);
            self.final_fields.push(super::func::FinalField {
                is_static: statics,
                name,
                assigned,
                unassigned: assigned + 1,
            });
        }
    }

    /// Records an allowed assignment of tracked final field `name` (see
    /// [`FnBuilder::track_final_fields`]): `FINAL_ASSIGNMENT` where it may be assigned already.
    fn final_field_assigned(&mut self, is_static: bool, name: &str, at: Span) {
        let Some(f) = self
            .final_fields
            .iter()
            .find(|f| f.is_static == is_static && f.name == name)
        else {
            return;
        };
        let (a, u) = (f.assigned, f.unassigned);
        self.check_final_unassigned(&format!("field '{name}'"), a, u, at);
        self.da[a] = true;
        self.da[u] = false;
    }

    /// `FINAL_ASSIGNMENT` at `at` unless the final `what` (`variable 'x'`, `field 'v'`) is
    /// definitely unassigned there (its facts: `assigned`, `unassigned`).
    fn check_final_unassigned(&mut self, what: &str, assigned: usize, unassigned: usize, at: Span) {
        if self.da[unassigned] {
            return;
        }
        let why = if self.da[assigned] {
            "is assigned twice"
        } else {
            "might already have been assigned"
        };
        self.error(code::FINAL_ASSIGNMENT, at, format!("final {what} {why}"));
    }

    /// LANGUAGE §5.3: a final static is assigned only by a `static {}` block of its class,
    /// and only if its declaration does not ("only by its initialiser … or a static {}
    /// block").
    pub(super) fn check_final_static(&mut self, si: u32, at: Span) {
        let st = &self.p.statics[si as usize];
        let in_clinit =
            matches!(self.job.kind, super::collect::JobKind::Clinit) && st.class == self.class;
        if st.is_final && !(in_clinit && self.static_initialiser(si).is_none()) {
            let n = st.name.clone();
            self.error(
                code::FINAL_ASSIGNMENT,
                at,
                format!("final field '{n}' cannot be assigned here"),
            );
        } else if st.is_final {
            let n = st.name.clone();
            self.final_field_assigned(true, &n, at);
        }
    }

    pub(super) fn place_ty(&self, p: &Place) -> Ty {
        match p {
            Place::Local(li) => self.locals[*li].ty.clone(),
            Place::Static(si) => self.p.statics[*si as usize].ty.clone(),
            Place::Field { ty, .. } => ty.clone(),
            Place::Elem { elem, .. } => elem.clone(),
            Place::Dev { elem, .. } | Place::Lane { elem, .. } | Place::DynLane { elem, .. } => {
                Ty::Prim(*elem)
            }
        }
    }

    pub(super) fn load_place(&mut self, p: &Place, span: Span) -> Val {
        let ty = self.place_ty(p);
        match p {
            Place::Local(li) => {
                let l = &self.locals[*li];
                let (reg, da, name) = (l.reg, l.da, l.name.clone());
                if self.reachable && !self.da[da] {
                    self.error(
                        code::VARIABLE_NOT_ASSIGNED,
                        span,
                        format!("variable '{name}' might not have been assigned"),
                    );
                }
                Val::reg(ty, reg)
            }
            Place::Static(si) => {
                let d = self.def(Op::GetStatic, ty.reg(), *si as u16, 0);
                Val::reg(ty, d)
            }
            Place::Field { obj, field, .. } => {
                let d = self.def(Op::GetField, ty.reg(), *obj, *field);
                Val::reg(ty, d)
            }
            Place::Elem { arr, idx, elem } => {
                self.set_pos(span);
                let d = self.elem_get(*arr, *idx, elem);
                Val::reg(ty, d)
            }
            Place::Lane { reg, .. } => Val::reg(ty, *reg),
            Place::DynLane { base, n, idx, elem } => {
                let d = self.lane_select(*base, *n, *idx, *elem, span);
                Val::reg(ty, d)
            }
            Place::Dev { base, idx, elem } => {
                self.set_pos(span);
                let d = self.def(
                    typed_op("ld", *elem).expect("ld"),
                    Type::Scalar(*elem),
                    *base,
                    *idx,
                );
                Val::reg(ty, d)
            }
        }
    }

    fn elem_get(&mut self, arr: Reg, idx: Reg, elem: &Ty) -> Reg {
        let op = match elem.elem_scalar() {
            Some(s) => typed_op("aget", s).expect("aget"),
            None => Op::ArrGetRef,
        };
        self.def(op, elem.reg(), arr, idx)
    }

    fn assign(
        &mut self,
        op: Option<BinOp>,
        transfer: bool,
        target: &Expr,
        value: &Expr,
        span: Span,
    ) -> Val {
        let Some(place) = self.place(target) else {
            let _ = self.expr(value);
            return Val::error();
        };
        let ty = self.place_ty(&place);
        // The target's object and index are complete before the value (§8.3).
        let place = match place {
            Place::Elem { arr, idx, elem } => Place::Elem {
                arr: self.pin_reg(arr, &[value]),
                idx: self.pin_reg(idx, &[value]),
                elem,
            },
            Place::Dev { base, idx, elem } => Place::Dev {
                base,
                idx: self.pin_reg(idx, &[value]),
                elem,
            },
            Place::Field { obj, field, ty } => Place::Field {
                obj: self.pin_reg(obj, &[value]),
                field,
                ty,
            },
            p => p,
        };
        if let (Place::Static(_), true) = (&place, self.device) {
            self.error(
                code::XPU_N01,
                target.span,
                "device code cannot write static fields",
            );
            return Val::error();
        }
        if let (&Place::Local(li), true) = (&place, self.device) {
            // XPU §3.2–3.3: device code passes buffers by storage and POD objects as one copy
            // taken at launch; neither parameter is reassignable (primitives are).
            let what = match ty {
                Ty::Buffer(_) => Some("a KernelBuffer parameter"),
                Ty::Class(_) => Some("a POD parameter"),
                _ => None,
            };
            if let (Some(what), true) = (what, li < self.param_locals) {
                self.error(
                    code::XPU_N01,
                    target.span,
                    format!("{what} is not reassignable in device code"),
                );
                let _ = self.expr(value);
                return Val::error();
            }
        }
        if let (Place::Local(_), Ty::Shared(_)) = (&place, &ty) {
            // XPU §2.6: a Shared variable denotes one workgroup array for good.
            self.error(
                code::XPU_N01,
                target.span,
                "a Shared variable is never reassigned",
            );
            let _ = self.expr(value);
            return Val::error();
        }
        if let Place::Static(si) = place {
            self.check_final_static(si, target.span);
        }
        let v = match op {
            None => {
                // An assignment is a conversion context: an array literal takes the target's
                // element type (§6.1, §3.2).
                let v = self.expr_for(value, &ty);
                if transfer {
                    self.transfer_name(value, v)
                } else {
                    v
                }
            }
            Some(bop) => {
                let cur = self.load_place(&place, target.span);
                let cur = self.pin(cur, &[value]);
                let rhs = self.expr(value);
                if self.void_value(&rhs, value.span) {
                    return Val::error();
                }
                if ty == Ty::Str && bop == BinOp::Add {
                    self.concat(cur, rhs, span)
                } else {
                    // float16/bfloat16 arithmetic is float32 arithmetic rounded back at the
                    // store (§3.4): `h += h2` is no lossy conversion of the program's.
                    let half_op = ty.scalar().is_some_and(Scalar::is_half)
                        && (rhs.untyped || rhs.ty.scalar().is_some_and(Scalar::is_half));
                    let res = self.binary_vals(bop, cur, rhs, span);
                    // `a op= b` is `a = (A)(a op b)` (§8.3), and its store a conversion
                    // context (§3.2): a store that may change the value warns.
                    match (res.ty.scalar(), ty.scalar()) {
                        (Some(from), Some(to))
                            if from != to && from.is_numeric() && to.is_numeric() =>
                        {
                            if ty::conversion_is_lossy(from, to) && !half_op {
                                self.warn(
                                    code::WARN_LOSSY_CONVERSION,
                                    span,
                                    format!(
                                        "the {} result is stored into {} and may change value",
                                        from.name(),
                                        to.name()
                                    ),
                                );
                            }
                            match self.materialize(&res) {
                                Some(r) => {
                                    let c = self.convert(r, from, to);
                                    Val::reg(ty.clone(), c)
                                }
                                None => Val::error(),
                            }
                        }
                        _ => res,
                    }
                }
            }
        };
        if v.ty == Ty::Error {
            return Val::error();
        }
        self.store_place(place, ty, v, span, value.span, target.span)
    }

    /// Stores `v` (converted to the place's type `ty`) into `place`; the value of the
    /// assignment expression.
    pub(super) fn store_place(
        &mut self,
        place: Place,
        ty: Ty,
        v: Val,
        span: Span,
        value_span: Span,
        target_span: Span,
    ) -> Val {
        let value = Expr {
            kind: ExprKind::Null,
            span: value_span,
        };
        let target = Expr {
            kind: ExprKind::Null,
            span: target_span,
        };
        self.set_pos(span);
        match place {
            Place::Local(li) => match self.store_local_at(li, v, value.span, target.span, false) {
                Some(r) => Val::reg(ty, r),
                None => Val::error(),
            },
            Place::Static(si) => {
                let own = v.own;
                let Some(r) = self.coerce(v, &ty, value.span) else {
                    return Val::error();
                };
                self.set_pos(span);
                self.store_static(si, r, own);
                Val::reg(ty, r)
            }
            Place::Field { obj, field, .. } => {
                let own = v.own;
                let Some(r) = self.coerce(v, &ty, value.span) else {
                    return Val::error();
                };
                self.set_pos(span);
                self.store_field(obj, field, r, own);
                Val::reg(ty, r)
            }
            Place::Lane { reg, .. } => {
                let Some(r) = self.coerce(v, &ty, value.span) else {
                    return Val::error();
                };
                self.move_into(reg, r);
                Val::reg(ty, reg)
            }
            Place::DynLane { base, n, idx, .. } => {
                let Some(r) = self.coerce(v, &ty, value.span) else {
                    return Val::error();
                };
                self.lane_store(base, n, idx, r, span);
                Val::reg(ty, r)
            }
            Place::Dev { base, idx, elem } => {
                let Some(r) = self.coerce(v, &ty, value.span) else {
                    return Val::error();
                };
                self.set_pos(span);
                self.emit(typed_op("st", elem).expect("st"), base, idx, r);
                Val::reg(ty, r)
            }
            Place::Elem { arr, idx, elem } => {
                let own = v.own;
                let Some(r) = self.coerce(v, &ty, value.span) else {
                    return Val::error();
                };
                self.set_pos(span);
                match elem.elem_scalar() {
                    Some(s) => {
                        self.emit(typed_op("aset", s).expect("aset"), arr, idx, r);
                    }
                    None => self.store_elem(arr, idx, r, own, &elem),
                }
                Val::reg(ty, r)
            }
        }
    }

    // ----- arrays and objects -----

    /// Lowers an index expression to an int64 register.
    pub(super) fn index_reg(&mut self, index: &Expr) -> Option<Reg> {
        let iv = self.expr(index);
        if let Some(r) = self.local_index(index, &iv) {
            return Some(r);
        }
        match iv.ty.scalar() {
            Some(s) if s.is_int() => self.coerce(iv, &Ty::Prim(Scalar::I64), index.span),
            _ if iv.ty == Ty::Error || self.void_value(&iv, index.span) => None,
            _ => {
                let n = self.ty_name(&iv.ty);
                self.error(
                    code::TYPE_MISMATCH,
                    index.span,
                    format!("an index must be an integer, found {n}"),
                );
                None
            }
        }
    }

    fn index(&mut self, target: &Expr, index: &Expr, span: Span) -> Val {
        let a = self.expr(target);
        let elem = match &a.ty {
            Ty::Vector(..) => return self.vector_index(a, index, span),
            Ty::Array(e) => (**e).clone(),
            Ty::Error => return Val::error(),
            Ty::Buffer(s) | Ty::Shared(s) if self.device => {
                let s = *s;
                let Some(base) = self.materialize(&a) else {
                    return Val::error();
                };
                return self.device_elem_get(base, s, index, span);
            }
            Ty::Buffer(_) => {
                self.error(
                    code::XPU_K04,
                    span,
                    "buffer elements can only be accessed in @Kernel or @Device code",
                );
                return Val::error();
            }
            t => {
                let n = self.ty_name(t);
                self.error(code::TYPE_MISMATCH, span, format!("{n} cannot be indexed"));
                return Val::error();
            }
        };
        let Some(ar) = self.materialize(&a) else {
            return Val::error();
        };
        let Some(idx) = self.index_reg(index) else {
            return Val::error();
        };
        self.set_pos(span);
        let d = self.elem_get(ar, idx, &elem);
        // `[1, 2, 3][k]`, `make()[k]`: the array is stored nowhere (§6.4).
        self.drop_at_end(a);
        Val::reg(elem, d)
    }

    fn new_array(
        &mut self,
        elem: &crate::ast::TypeExpr,
        dims: &[Expr],
        init: Option<&Vec<Expr>>,
        span: Span,
    ) -> Val {
        if !self.host_only("creating an array", span) {
            return Val::error();
        }
        if let (Some(items), true) = (init, dims.is_empty()) {
            let et = match self.p.resolve_type(self.unit, elem) {
                Ok(t) => t,
                Err(d) => {
                    self.diags.push(d);
                    return Val::error();
                }
            };
            return self.array_literal(items, Some(et), span);
        }
        if init.is_some() || dims.is_empty() {
            self.error(
                code::NOT_IMPLEMENTED,
                span,
                "array initialisers with dimensions are not implemented (use heap T[] { … })",
            );
            return Val::error();
        }
        let et = match self.p.resolve_type(self.unit, elem) {
            Ok(t) => t,
            Err(d) => {
                self.diags.push(d);
                return Val::error();
            }
        };
        // Every length first, left to right (LANGUAGE §8.2), as int64.
        let mut lens = Vec::with_capacity(dims.len());
        for d in dims {
            let len = self.expr(d);
            if !len.ty.is_int() {
                if len.ty != Ty::Error && !self.void_value(&len, d.span) {
                    let n = self.ty_name(&len.ty);
                    self.error(
                        code::TYPE_MISMATCH,
                        d.span,
                        format!("an array length must be an integer, found {n}"),
                    );
                }
                return Val::error();
            }
            let Some(lr) = self.coerce(len, &Ty::Prim(Scalar::I64), d.span) else {
                return Val::error();
            };
            lens.push(lr);
        }
        let ty = dims.iter().fold(et, |t, _| Ty::Array(Box::new(t)));
        self.set_pos(span);
        let d = if let [len] = lens[..] {
            self.def(Op::NewArr, ty.reg(), len, 0)
        } else {
            // The lengths must outlive the rows' loops, which reuse temporaries.
            let kept: Vec<Reg> = lens
                .iter()
                .map(|&l| {
                    let k = self.new_reg(Type::I64);
                    self.emit(Op::Mov, k, l, 0);
                    k
                })
                .collect();
            self.new_rows(&ty, &kept)
        };
        Val {
            ty,
            loc: Loc::Reg(d),
            untyped: false,
            own: Own::Yes,
        }
    }

    /// A new array of type `ty` with length `lens[0]` whose elements, for more lengths, are
    /// new arrays of the next lengths, each owned by its element (T2 `heap T[n][m]`, LANGUAGE
    /// §6.1, §6.5): the rows are made in index order by a loop.
    fn new_rows(&mut self, ty: &Ty, lens: &[Reg]) -> Reg {
        let arr = self.new_reg(ty.reg());
        self.emit(Op::NewArr, arr, lens[0], 0);
        let (Ty::Array(row_ty), [_, rest @ ..]) = (ty, lens) else {
            return arr;
        };
        if rest.is_empty() {
            return arr;
        }
        let i = self.new_reg(Type::I64);
        self.load_bits_into(i, Type::I64, 0);
        let header = self.pc();
        let more = self.new_reg(Type::BOOL);
        self.emit(Op::LtI64, more, i, lens[0]);
        let exit = self.emit_bc(Op::JmpIfNot, more, 0);
        let row = self.new_rows(row_ty, rest);
        self.init_elem(arr, i, row, Own::Yes, row_ty);
        let cont = self.pc();
        self.emit(Op::AddImmI64, i, i, 1);
        self.emit_bc(Op::Jmp, 0, header);
        let merge = self.pc();
        self.patch(exit, merge);
        self.region(cajeta_bytecode::RegionKind::Loop, header, cont, merge);
        arr
    }

    fn new_object(
        &mut self,
        _placement: Placement,
        t: &crate::ast::TypeExpr,
        args: &[Arg],
        span: Span,
    ) -> Val {
        let resolved = self.p.resolve_type(self.unit, t);
        // A Vector is a value (LANGUAGE §6.1: heap/stack just produce it), also on the device.
        if let Ok(Ty::Vector(s, n)) = resolved {
            if s == Scalar::Bool {
                // A mask is a comparison's result, never built (XPU §2.11: T numeric).
                let at = match &t.kind {
                    crate::ast::TypeKind::Named { args, .. } => match args.first() {
                        Some(crate::ast::TypeArg::Type(e)) => e.span,
                        _ => t.span,
                    },
                    _ => t.span,
                };
                self.error(
                    code::VECTOR_ELEMENT_TYPE,
                    at,
                    "'boolean' is not a Vector element type (a numeric type); a mask \
                     (Vector<boolean,N>) comes from a comparison",
                );
                return Val::error();
            }
            return self.vector_new(s, n, args, span);
        }
        // A later-tier type is that, also in device code (`stack Matrix<…>(…)`).
        let later = matches!(&resolved, Err(d) if d.code == code::NOT_IMPLEMENTED);
        if !later && !self.host_only("creating an object", span) {
            return Val::error();
        }
        let ty = match resolved {
            Ok(t) => t,
            Err(d) => {
                self.diags.push(d);
                for a in args {
                    let _ = self.expr(&a.value);
                }
                return Val::error();
            }
        };
        match ty {
            Ty::Class(c) => {
                let ctors = self.p.classes[c as usize].ctors.clone();
                let vals = self.eval_args_for(args, &ctors);
                let Some(sig) = self.resolve_overload(&ctors, args, &vals, span, true) else {
                    return Val::error();
                };
                self.check_access(sig.access, c, span, "<init>");
                self.set_pos(span);
                let obj = self.def(Op::NewObj, Type::Object(c), 0, 0);
                let last = self.code.len() - 1;
                self.code[last].set_bc(c);
                self.emit_call(&sig, Some((obj, c)), vals, args, span);
                Val {
                    ty: Ty::Class(c),
                    loc: Loc::Reg(obj),
                    untyped: false,
                    own: Own::Yes,
                }
            }
            Ty::Buffer(elem) => self.new_buffer(elem, args, span, false),
            other => {
                let n = self.ty_name(&other);
                self.error(
                    code::NO_MATCHING_CONSTRUCTOR,
                    span,
                    format!("{n} cannot be created with heap/stack"),
                );
                Val::error()
            }
        }
    }

    // ----- calls -----

    /// Evaluates call arguments in written order, each complete before the next (§8.4).
    pub fn eval_args(&mut self, args: &[Arg]) -> Vec<Val> {
        self.eval_args_for(args, &[])
    }

    /// [`FnBuilder::eval_args`] for a call of one of `cands`: an array literal argument takes
    /// its element type from the parameter it binds to when every candidate that binds it
    /// agrees on that type (`g([0.1, 2])` for a `float32[]` parameter, LANGUAGE §6.1).
    pub fn eval_args_for(&mut self, args: &[Arg], cands: &[MethodSig]) -> Vec<Val> {
        let mut vals = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            let v = match Self::array_param(cands, args, i) {
                Some(t) => self.expr_for(&a.value, &t),
                None => self.expr(&a.value),
            };
            let later: Vec<&Expr> = args[i + 1..].iter().map(|a| &a.value).collect();
            vals.push(self.pin(v, &later));
        }
        vals
    }

    /// The array type every candidate gives the parameter that argument `i` binds to, if
    /// argument `i` is an array literal and the candidates that bind it agree.
    fn array_param(cands: &[MethodSig], args: &[Arg], i: usize) -> Option<Ty> {
        if !matches!(args[i].value.kind, ExprKind::ArrayLit(_)) {
            return None;
        }
        let mut found: Option<Ty> = None;
        for c in cands {
            let Ok(binding) = Self::bind_args(c, args) else {
                continue;
            };
            let p = binding.iter().position(|&ai| ai == i)?;
            let t = &c.params[p].1;
            if !matches!(t, Ty::Array(_)) || found.as_ref().is_some_and(|f| f != t) {
                return None;
            }
            found = Some(t.clone());
        }
        found
    }

    /// LANGUAGE §8.2: every operand is complete before its operator applies. An operand that
    /// is a local is the local's register, read only when the operator applies; where a later
    /// operand assigns that local (`i + i++`, `f(i, i = 2)`, `y += (y = 3)`), the earlier
    /// operand's value is copied first.
    pub(super) fn pin(&mut self, v: Val, later: &[&Expr]) -> Val {
        match v.loc {
            Loc::Reg(r) => Val {
                loc: Loc::Reg(self.pin_reg(r, later)),
                ..v
            },
            _ => v,
        }
    }

    /// [`FnBuilder::pin`] for a register.
    pub(super) fn pin_reg(&mut self, r: Reg, later: &[&Expr]) -> Reg {
        let mut names = vec![];
        for e in later {
            assigned_names(e, &mut names);
        }
        let assigned = names.iter().any(|n| {
            self.lookup_local(n)
                .is_some_and(|li| self.locals[li].reg == r)
        });
        if !assigned {
            return r;
        }
        let t = self.temp(self.regs[usize::from(r)]);
        self.emit(Op::Mov, t, r, 0);
        t
    }

    /// Binds arguments to a candidate's parameters: for each parameter, the argument index.
    /// An index that is an integer local (not int64): its cached int64 copy.
    pub(super) fn local_index(&mut self, index: &Expr, v: &Val) -> Option<Reg> {
        let (ExprKind::Name(id), Loc::Reg(r)) = (&index.kind, &v.loc) else {
            return None;
        };
        let li = self.lookup_local(&id.name)?;
        let l = &self.locals[li];
        l.ty.scalar().filter(|s| s.is_int() && *s != Scalar::I64)?;
        (l.reg == *r).then(|| self.index_of_local(*r))
    }

    pub(super) fn bind_args(sig: &MethodSig, args: &[Arg]) -> Result<Vec<usize>, String> {
        let n = sig.params.len();
        let mut slots: Vec<Option<usize>> = vec![None; n];
        let mut seen_named = false;
        for (i, a) in args.iter().enumerate() {
            match &a.name {
                None => {
                    if seen_named {
                        return Err("a positional argument follows a named argument".into());
                    }
                    if i >= n {
                        return Err("too many arguments".into());
                    }
                    slots[i] = Some(i);
                }
                Some(name) => {
                    seen_named = true;
                    let Some(p) = sig.params.iter().position(|(pn, _)| *pn == name.name) else {
                        return Err(format!("no parameter named '{}'", name.name));
                    };
                    if slots[p].is_some() {
                        return Err(format!("parameter '{}' is bound twice", name.name));
                    }
                    slots[p] = Some(i);
                }
            }
        }
        slots
            .into_iter()
            .map(|s| s.ok_or_else(|| "not every parameter is bound".to_string()))
            .collect()
    }

    /// Overload resolution (LANGUAGE §8.4).
    pub fn resolve_overload(
        &mut self,
        cands: &[MethodSig],
        args: &[Arg],
        vals: &[Val],
        span: Span,
        ctor: bool,
    ) -> Option<MethodSig> {
        if vals.iter().any(|v| v.ty == Ty::Error) {
            return None;
        }
        let not_found = if ctor {
            code::NO_MATCHING_CONSTRUCTOR
        } else {
            code::UNRESOLVED_METHOD
        };
        // Named-argument misuse is its own error.
        let mut seen_named = false;
        for a in args {
            if a.name.is_some() {
                seen_named = true;
            } else if seen_named {
                self.error(
                    code::NAMEDARG,
                    a.value.span,
                    "a positional argument follows a named argument",
                );
                return None;
            }
        }
        // A void call as an argument has no value (§8.4), whatever the candidates.
        if let Some(a) = vals.iter().position(|v| v.ty == Ty::Void) {
            self.error(
                code::UNRESOLVED_EXPRESSION,
                args[a].value.span,
                "a void call has no value",
            );
            return None;
        }
        let mut scored: Vec<(MethodSig, Vec<u32>)> = vec![];
        let (mut bind_err, mut bind_fails) = (None, 0);
        for c in cands {
            let binding = match Self::bind_args(c, args) {
                Ok(b) => b,
                Err(e) => {
                    bind_err = Some(e);
                    bind_fails += 1;
                    continue;
                }
            };
            let mut ranks = vec![0; c.params.len()];
            let mut ok = true;
            for (pi, &ai) in binding.iter().enumerate() {
                match ty::arg_rank(&vals[ai].ty, &c.params[pi].1) {
                    Some(r) => ranks[ai] = r,
                    None => ok = false,
                }
            }
            if ok {
                scored.push((c.clone(), ranks));
            }
        }
        let named = args.iter().any(|a| a.name.is_some());
        if scored.is_empty() {
            // Named arguments that bind no candidate (an unknown name, one bound twice, a
            // parameter left unbound) are that misuse, with or without overloads (§8.4).
            if named && bind_fails == cands.len() {
                if let Some(e) = bind_err {
                    self.error(code::NAMEDARG, span, e);
                    return None;
                }
            }
            let types: Vec<String> = vals.iter().map(|v| self.ty_name(&v.ty)).collect();
            let what = match cands {
                _ if ctor => "constructor".to_string(),
                [c] if c.kind == cajeta_bytecode::FnKind::Kernel => format!("kernel '{}'", c.name),
                [c] => format!("method '{}'", c.name),
                _ => "method".to_string(),
            };
            // One candidate: its parameters say what was expected.
            let takes = match cands {
                [c] => {
                    let params: Vec<String> =
                        c.params.iter().map(|(_, t)| self.ty_name(t)).collect();
                    format!(" (it takes ({}))", params.join(", "))
                }
                _ => String::new(),
            };
            self.error(
                not_found,
                span,
                format!(
                    "no matching {what} for arguments ({}){takes}",
                    types.join(", ")
                ),
            );
            return None;
        }
        let best: Vec<usize> = (0..scored.len())
            .filter(|&i| {
                scored.iter().enumerate().all(|(j, o)| {
                    i == j || {
                        let (a, b) = (&scored[i].1, &o.1);
                        a.iter().zip(b).all(|(x, y)| x <= y) && a.iter().zip(b).any(|(x, y)| x < y)
                    }
                })
            })
            .collect();
        match best.as_slice() {
            [i] => Some(scored[*i].0.clone()),
            _ if scored.len() == 1 => Some(scored[0].0.clone()),
            _ => {
                self.error(
                    not_found,
                    span,
                    "ambiguous call: several overloads match equally well",
                );
                None
            }
        }
    }

    /// Emits a call with already-evaluated arguments. `this` is the receiver of a constructor.
    /// Returns the result value.
    pub fn emit_call(
        &mut self,
        sig: &MethodSig,
        this: Option<(Reg, u32)>,
        vals: Vec<Val>,
        args: &[Arg],
        span: Span,
    ) -> Val {
        let binding = Self::bind_args(sig, args).unwrap_or_default();
        let mut types: Vec<Type> = vec![];
        if let Some((_, class)) = this {
            types.push(Type::Object(class));
        }
        types.extend(super::xpu::param_types(self, sig));
        // Convert every argument before the window is allocated, so that no conversion
        // temporary lands above it.
        let mut regs = vec![];
        let mut owns = vec![];
        for (pi, (_, pty)) in sig.params.iter().enumerate() {
            let ai = binding.get(pi).copied().unwrap_or(pi);
            let v = vals[ai].clone();
            owns.push(v.own);
            if let (Ty::Class(_), true) = (pty, sig.kind != cajeta_bytecode::FnKind::Host) {
                // Device code passes POD objects flattened to their fields.
                let Some(fields) = self.pod_fields(args.get(ai).map(|a| &a.value), &v, pty) else {
                    return Val::error();
                };
                regs.extend(fields);
                continue;
            }
            if let (Ty::Buffer(_), false) = (pty, v.ty == *pty || v.ty == Ty::Error) {
                let (a, b) = (self.ty_name(&v.ty), self.ty_name(pty));
                self.error(
                    code::TYPE_MISMATCH,
                    args.get(ai).map_or(span, |a| a.value.span),
                    format!("expected {b}, found {a}"),
                );
                return Val::error();
            }
            let Some(r) = self.coerce(v, pty, args.get(ai).map_or(span, |a| a.value.span)) else {
                return Val::error();
            };
            if let Ty::Shared(_) = pty {
                // A shared array and its length (the dynamic array's per-item length).
                let len = self.shared_arg_len(r);
                regs.extend([r, len]);
                continue;
            }
            // A vector argument is its lanes (consecutive registers).
            regs.extend((0..pty.lanes() as u16).map(|k| r + k));
        }
        let mut flag_srcs = vec![];
        for (pi, (_, pty)) in sig.params.iter().enumerate() {
            // Owns-flags exist only for host callees (see `MethodSig::flag_count`).
            if pty.is_owned_kind() && sig.flag_count() > 0 {
                let f = match owns[pi] {
                    Own::No => None,
                    Own::Yes => Some(self.load_bool(true)),
                    Own::Dyn(f) => Some(f),
                };
                flag_srcs.push(f);
            }
        }
        let base = self.window(&types);
        let mut slot = base;
        if let Some((t, _)) = this {
            self.emit(Op::Mov, slot, t, 0);
            slot += 1;
        }
        for r in regs {
            self.emit(Op::Mov, slot, r, 0);
            slot += 1;
        }
        for f in flag_srcs {
            match f {
                Some(f) => self.emit(Op::Mov, slot, f, 0),
                None => self.emit_bc(Op::LoadI, slot, 0),
            };
            slot += 1;
        }
        self.set_pos(span);
        let ret = sig.ret.clone();
        if ret == Ty::Void {
            self.emit(Op::Call, 0, base, sig.func as u16);
            return Val {
                ty: Ty::Void,
                loc: Loc::None,
                untyped: false,
                own: Own::No,
            };
        }
        let d = self.def(Op::Call, ret.reg(), base, sig.func as u16);
        if let Ty::Vector(..) = ret {
            return self.vector_call_result(&ret, d);
        }
        if ret.is_owned_kind() {
            let f = self.temp(Type::BOOL);
            self.emit(Op::TakeOwn, f, 0, 0);
            return Val {
                ty: ret,
                loc: Loc::Reg(d),
                untyped: false,
                own: Own::Dyn(f),
            };
        }
        Val::reg(ret, d)
    }

    fn call(
        &mut self,
        target: Option<&Expr>,
        name: &crate::ast::Ident,
        args: &[Arg],
        span: Span,
    ) -> Val {
        match target {
            None => {
                let methods: Vec<MethodSig> = self.p.classes[self.class as usize]
                    .methods
                    .iter()
                    .filter(|m| m.name == name.name)
                    .cloned()
                    .collect();
                if methods.is_empty() {
                    let _ = self.eval_args(args);
                    let message = if name.name == "this" {
                        "`this(…)` calls another constructor only as the first statement of a \
                         constructor"
                            .to_string()
                    } else {
                        let hint = if self.p.lookup_class(self.unit, &name.name).is_some() {
                            creation_hint(&name.name)
                        } else {
                            String::new()
                        };
                        format!("unknown method '{}'{hint}", name.name)
                    };
                    self.error(code::UNRESOLVED_METHOD, name.span, message);
                    return Val::error();
                }
                // In an instance context a bare call may name an instance method of `this`.
                let recv = self.this;
                self.method_call(self.class, &methods, recv, args, span)
            }
            Some(t) => {
                if let Some(cls) = self.class_path(t) {
                    return match cls {
                        ClassRef::User(c) => {
                            let methods: Vec<MethodSig> = self.p.classes[c as usize]
                                .methods
                                .iter()
                                .filter(|m| m.name == name.name)
                                .cloned()
                                .collect();
                            if methods.is_empty() {
                                let _ = self.eval_args(args);
                                let cn = self.p.class_name(c).to_string();
                                self.error(
                                    code::UNRESOLVED_METHOD,
                                    name.span,
                                    format!("'{cn}' has no method '{}'", name.name),
                                );
                                return Val::error();
                            }
                            self.method_call(c, &methods, None, args, span)
                        }
                        ClassRef::Lib(lib) => {
                            match self.xpu_static_call(lib, t, name, args, span) {
                                Some(v) => v,
                                None => self.lib_call(lib, t, name, args, span),
                            }
                        }
                    };
                }
                if name.name == "manifest" {
                    if let Some(v) = self.kernel_manifest_call(t, args, span) {
                        return v;
                    }
                }
                if let Some(v) = self.system_stream_call(t, name, args, span) {
                    return v;
                }
                let recv = self.expr(t);
                if self.void_value(&recv, t.span) {
                    let _ = self.eval_args(args);
                    return Val::error();
                }
                self.method_on_value(recv, name, args, span)
            }
        }
    }

    /// A call of one of `methods` (same name, of class `class`); `recv` is the receiver for an
    /// instance method (`obj.m()`, or `this` for a bare call in an instance context).
    fn method_call(
        &mut self,
        class: u32,
        methods: &[MethodSig],
        recv: Option<Reg>,
        args: &[Arg],
        span: Span,
    ) -> Val {
        let vals = self.eval_args_for(args, methods);
        let Some(mut sig) = self.resolve_overload(methods, args, &vals, span, false) else {
            return Val::error();
        };
        self.check_access(sig.access, class, span, &sig.name);
        if let (Some(twin), true) = (sig.device_twin, self.device) {
            sig = MethodSig {
                kind: cajeta_bytecode::FnKind::Device,
                func: twin,
                device_twin: None,
                ..sig
            };
        }
        use cajeta_bytecode::FnKind;
        let side_error = match (sig.kind, self.device) {
            (FnKind::Kernel, _) => Some((
                code::XPU_N02,
                "is a kernel: launch it with .launch(...), never call it",
            )),
            (FnKind::Device, false) => Some((
                code::XPU_K04,
                "is a @Device function: it can only be called from device code",
            )),
            (FnKind::Host, true) => Some((
                code::XPU_N01,
                "is not a @Device function: it cannot be called from device code",
            )),
            _ => None,
        };
        if let Some((c, why)) = side_error {
            self.error(c, span, format!("'{}' {why}", sig.name));
            return Val::error();
        }
        if !sig.is_static {
            let Some(obj) = recv else {
                self.error(
                    code::UNRESOLVED_METHOD,
                    span,
                    format!(
                        "instance method '{}' called from a static context",
                        sig.name
                    ),
                );
                return Val::error();
            };
            // A call through null or a dropped object is E-NULL / E-DROPPED at the call
            // (§8.4); `this` is live while its method runs.
            if Some(obj) != self.this {
                self.set_pos(span);
                self.emit(Op::ChkObj, obj, sig.func as u16, 0);
            }
            return self.emit_call(&sig, Some((obj, class)), vals, args, span);
        }
        if self.device && matches!(sig.ret, Ty::Vector(..)) {
            return self.inline_device_call(&sig, vals, args, span);
        }
        if let Some(body) = self.inlinable_body(&sig) {
            return self.inline_call(&sig, &body, vals, args, span);
        }
        self.emit_call(&sig, None, vals, args, span)
    }

    pub(super) fn method_on_value(
        &mut self,
        recv: Val,
        name: &crate::ast::Ident,
        args: &[Arg],
        span: Span,
    ) -> Val {
        if let Ty::Vector(..) = recv.ty {
            return self.vector_method(recv, name, args, span);
        }
        if let Some(v) = self.xpu_method(&recv, name, args, span) {
            // `heap KernelBuffer<T>(n).length()`: the receiver is stored nowhere (§6.4).
            self.drop_at_end(recv);
            return v;
        }
        if let Ty::Class(c) = recv.ty {
            let methods: Vec<MethodSig> = self.p.classes[c as usize]
                .methods
                .iter()
                .filter(|m| m.name == name.name)
                .cloned()
                .collect();
            if !methods.is_empty() {
                let Some(obj) = self.materialize(&recv) else {
                    return Val::error();
                };
                let v = self.method_call(c, &methods, Some(obj), args, span);
                self.drop_at_end(recv);
                return v;
            }
        }
        if recv.ty == Ty::Str {
            if !self.host_only("a String", span) {
                return Val::error();
            }
            return self.string_method(&recv, name, args, span);
        }
        match recv.ty.clone() {
            Ty::Error => {
                let _ = self.eval_args(args);
                Val::error()
            }
            Ty::Array(_) if name.name == "count" && args.is_empty() => {
                let Some(r) = self.materialize(&recv) else {
                    return Val::error();
                };
                self.set_pos(span);
                let d = self.def(Op::ArrLen, Type::I64, r, 0);
                self.drop_unstored(&recv);
                Val::reg(Ty::Prim(Scalar::I64), d)
            }
            t => {
                let _ = self.eval_args(args);
                let n = self.ty_name(&t);
                self.error(
                    code::UNRESOLVED_METHOD,
                    name.span,
                    format!("{n} has no method '{}'", name.name),
                );
                Val::error()
            }
        }
    }

    fn invoke(&mut self, callee: &Expr, args: &[Arg], span: Span) -> Val {
        if let ExprKind::Call {
            name,
            target: Some(_),
            ..
        } = &callee.kind
        {
            if name.name == "launch" {
                if !self.launch_statement {
                    self.error(
                        code::XPU_N02,
                        span,
                        "a launch is a statement: it yields no value",
                    );
                    return Val::error();
                }
                return self.launch(callee, args, span);
            }
        }
        let _ = self.eval_args(args);
        if let ExprKind::GenericName { name, .. } = &callee.kind {
            // `KernelBuffer<float32>(4)`: a creation without `heap`/`stack` (LANGUAGE §6.1).
            let generic = format!("{}<…>", name.name);
            let message = format!("unknown method '{}'{}", name.name, creation_hint(&generic));
            self.error(code::UNRESOLVED_METHOD, callee.span, message);
            return Val::error();
        }
        self.error(
            code::NOT_IMPLEMENTED,
            span,
            "calling the result of a call is not supported",
        );
        Val::error()
    }

    /// Library fields: enum constants.
    /// `class` is where the class name was written (a later-tier member is reported there, at
    /// the construct's first token).
    fn lib_field(&mut self, lib: LibClass, name: &crate::ast::Ident, class: Span) -> Val {
        let e = match lib {
            LibClass::MemoryKind => Some(ty::EnumTy::MemoryKind),
            LibClass::MemoryOrder => Some(ty::EnumTy::MemoryOrder),
            LibClass::Capability => Some(ty::EnumTy::Capability),
            _ => None,
        };
        if let Some(e) = e {
            if let Some(o) = e.constants().iter().position(|c| *c == name.name) {
                return Val {
                    ty: Ty::Enum(e),
                    loc: Loc::Enum(o as u32),
                    untyped: false,
                    own: Own::No,
                };
            }
        }
        if lib == LibClass::System && builtins::later_tier_member("System", &name.name) {
            self.error(
                code::NOT_IMPLEMENTED,
                class.to(name.span),
                builtins::later_tier(&format!("'System.{}'", name.name)),
            );
            return Val::error();
        }
        if lib == LibClass::System && matches!(name.name.as_str(), "stdout" | "stderr") {
            // The streams only print (§5.9): `System.stdout.println(x)`.
            self.error(
                code::TYPE_MISMATCH,
                class.to(name.span),
                format!(
                    "'System.{}' is not a value: call its print or println",
                    name.name
                ),
            );
            return Val::error();
        }
        if lib == LibClass::System {
            self.error(
                code::UNKNOWN_SYSTEM_STREAM,
                name.span,
                format!(
                    "'System.{}' is not a known member (use System.stdout or System.stderr)",
                    name.name
                ),
            );
            return Val::error();
        }
        self.error(
            code::VARIABLE_NOT_FOUND,
            name.span,
            format!("'{}' has no member '{}'", lib.name(), name.name),
        );
        Val::error()
    }
}

fn unsigned_of(s: Scalar) -> Scalar {
    match s {
        Scalar::I8 => Scalar::U8,
        Scalar::I16 => Scalar::U16,
        Scalar::I32 => Scalar::U32,
        Scalar::I64 => Scalar::U64,
        s => s,
    }
}

pub(super) fn signed_of(s: Scalar) -> Scalar {
    match s {
        Scalar::U8 => Scalar::I8,
        Scalar::U16 => Scalar::I16,
        Scalar::U32 => Scalar::I32,
        Scalar::U64 => Scalar::I64,
        s => s,
    }
}

fn const_string(v: &Val) -> Option<String> {
    match (&v.loc, &v.ty) {
        (Loc::Str(s), _) => Some(s.clone()),
        (Loc::Bool(b), _) => Some(b.to_string()),
        (Loc::Null, _) => Some("null".into()),
        (Loc::Enum(o), Ty::Enum(e)) => Some(e.constants()[*o as usize].to_string()),
        (Loc::Num(Num::Int(i)), Ty::Prim(s)) if s.is_int() => Some(i.to_string()),
        // What `tostr` prints (LANGUAGE §3.5), from the constant's bits in its type.
        (Loc::Char(c), _) => Some(format::char_text(u64::from(*c)).to_string()),
        (Loc::Num(n), Ty::Prim(s)) if s.is_float() => {
            let bits = ty::const_cell(*n, *s);
            Some(match s {
                Scalar::F32 => format::fmt_g(f64::from(f32::from_bits(bits as u32))),
                Scalar::F16 => format::fmt_g(f64::from(half::f16_to_f32(bits as u16))),
                Scalar::BF16 => format::fmt_g(f64::from(half::bf16_to_f32(bits as u16))),
                _ => format::fmt_g(f64::from_bits(bits)),
            })
        }
        _ => None,
    }
}

/// Folds `a op b` on constants (operand types `lt`, `rt`, computed in `work`, result `p`).
/// `None` when the operation would raise a runtime error (then it is not constant).
fn fold_arith(
    op: BinOp,
    a: Num,
    lt: Scalar,
    b: Num,
    rt: Scalar,
    work: Scalar,
    p: Scalar,
) -> Option<Num> {
    let x = ty::const_cell(ty::cell_num(ty::const_cell(a, lt), lt), work);
    let y = ty::const_cell(ty::cell_num(ty::const_cell(b, rt), rt), work);
    let res_bits = if work.is_float() {
        let (fx, fy) = match (ty::cell_num(x, work), ty::cell_num(y, work)) {
            (Num::Float(p), Num::Float(q)) => (p, q),
            _ => return None,
        };
        let r = match op {
            BinOp::Add => fx + fy,
            BinOp::Sub => fx - fy,
            BinOp::Mul => fx * fy,
            BinOp::Div => fx / fy,
            BinOp::Rem => fx % fy,
            _ => return None,
        };
        if work == Scalar::F32 {
            // float32 arithmetic rounds once: compute exactly representable ops in f32.
            let (gx, gy) = (fx as f32, fy as f32);
            let r32 = match op {
                BinOp::Add => gx + gy,
                BinOp::Sub => gx - gy,
                BinOp::Mul => gx * gy,
                BinOp::Div => gx / gy,
                _ => gx % gy,
            };
            (r32.to_bits()) as u64
        } else {
            r.to_bits()
        }
    } else {
        let signed = work.is_signed();
        let (ix, iy) = (x as i64, y as i64);
        let r: u64 = match op {
            BinOp::Add => x.wrapping_add(y),
            BinOp::Sub => x.wrapping_sub(y),
            BinOp::Mul => x.wrapping_mul(y),
            BinOp::BitAnd => x & y,
            BinOp::BitOr => x | y,
            BinOp::BitXor => x ^ y,
            BinOp::Div | BinOp::Rem => {
                if y == 0 {
                    return None;
                }
                if signed {
                    let min = ty::canon(1u64 << (work.bits() - 1), work) as i64;
                    if op == BinOp::Div && ix == min && iy == -1 {
                        return None;
                    }
                    if op == BinOp::Div {
                        ix.wrapping_div(iy) as u64
                    } else {
                        ix.wrapping_rem(iy) as u64
                    }
                } else if op == BinOp::Div {
                    x / y
                } else {
                    x % y
                }
            }
            _ => return None,
        };
        ty::canon(r, work)
    };
    let n = ty::cell_num(res_bits, work);
    Some(ty::cell_num(ty::const_cell(n, p), p))
}

fn fold_cmp(op: BinOp, x: Num, y: Num) -> Option<bool> {
    Some(match (x, y) {
        (Num::Int(a), Num::Int(b)) => match op {
            BinOp::Lt => a < b,
            BinOp::Le => a <= b,
            BinOp::Gt => a > b,
            BinOp::Ge => a >= b,
            BinOp::Eq => a == b,
            _ => a != b,
        },
        (Num::Float(a), Num::Float(b)) => match op {
            BinOp::Lt => a < b,
            BinOp::Le => a <= b,
            BinOp::Gt => a > b,
            BinOp::Ge => a >= b,
            BinOp::Eq => a == b,
            _ => a != b,
        },
        _ => return None,
    })
}

/// The names an expression may assign as locals (`x = …`, `x op= …`, `++x`, `x--`), for
/// [`FnBuilder::pin`]. Calls cannot assign a caller's locals, so the syntax tells it all.
fn assigned_names<'e>(e: &'e Expr, out: &mut Vec<&'e str>) {
    fn name_of(e: &Expr) -> Option<&str> {
        match &e.kind {
            ExprKind::Name(id) => Some(&id.name),
            ExprKind::Paren(inner) => name_of(inner),
            _ => None,
        }
    }
    let sub = |x: &'e Expr, out: &mut Vec<&'e str>| assigned_names(x, out);
    match &e.kind {
        ExprKind::Assign { target, value, .. } => {
            out.extend(name_of(target));
            sub(target, out);
            sub(value, out);
        }
        ExprKind::Unary { op, operand } => {
            if matches!(op, UnOp::PreInc | UnOp::PreDec) {
                out.extend(name_of(operand));
            }
            sub(operand, out);
        }
        ExprKind::Postfix { operand, .. } => {
            out.extend(name_of(operand));
            sub(operand, out);
        }
        ExprKind::Paren(x) | ExprKind::Transfer(x) | ExprKind::Cast { expr: x, .. } => sub(x, out),
        ExprKind::Field { target, .. } => sub(target, out),
        ExprKind::Call { target, args, .. } => {
            if let Some(t) = target {
                sub(t, out);
            }
            for a in args {
                sub(&a.value, out);
            }
        }
        ExprKind::Invoke { callee, args } => {
            sub(callee, out);
            for a in args {
                sub(&a.value, out);
            }
        }
        ExprKind::Index { target, index } => {
            sub(target, out);
            sub(index, out);
        }
        ExprKind::Binary { lhs, rhs, .. } => {
            sub(lhs, out);
            sub(rhs, out);
        }
        ExprKind::Cond { cond, then, els } => {
            sub(cond, out);
            sub(then, out);
            sub(els, out);
        }
        ExprKind::New { args, .. } => {
            for a in args {
                sub(&a.value, out);
            }
        }
        ExprKind::NewArray { dims, init, .. } => {
            for x in dims.iter().chain(init.iter().flatten()) {
                sub(x, out);
            }
        }
        ExprKind::SharedArray { len, .. } => sub(len, out),
        ExprKind::ArrayLit(xs) => {
            for x in xs {
                sub(x, out);
            }
        }
        ExprKind::Switch { selector, arms } => {
            sub(selector, out);
            for a in arms {
                sub(&a.value, out);
            }
        }
        ExprKind::Int { .. }
        | ExprKind::Float { .. }
        | ExprKind::Char(_)
        | ExprKind::Str(_)
        | ExprKind::Bool(_)
        | ExprKind::Null
        | ExprKind::Name(_)
        | ExprKind::This
        | ExprKind::GenericName { .. } => {}
    }
}

/// Whether `e` names a variable whose title `#` can take (LANGUAGE §6.3, §8.1: "a local,
/// parameter or field name"): a name, or a field reached through a chain of names and
/// `this` (`this.f`, `Cls.f`, `a.b.f`), which can be read twice without effect.
fn names_a_variable(e: &Expr) -> bool {
    fn chain(e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Name(_) | ExprKind::This => true,
            ExprKind::Field { target, .. } => chain(target),
            _ => false,
        }
    }
    match &e.kind {
        ExprKind::Name(_) => true,
        ExprKind::Field { target, .. } => chain(target),
        _ => false,
    }
}

/// The hint for a call of a type name, `P(3)`: objects are created with `heap` or `stack`
/// (LANGUAGE §6.1).
fn creation_hint(class: &str) -> String {
    format!(" (an object is created with `heap {class}(…)` or `stack {class}(…)`)")
}
