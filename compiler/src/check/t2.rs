//! Tier-2 expression and statement forms (LANGUAGE §7, §8.3): `?:`, `++`/`--`, array
//! literals, and `switch` statements and expressions.
//!
//! Arms whose type decides the result type (`?:`, switch expressions, untargeted array
//! literals) are typed by a *probe*: the arm is lowered once, its type noted, and the emitted
//! code and diagnostics are rolled back before the real lowering with the unified type.

use super::expr::Place;
use super::func::{FnBuilder, Loc, LoopCtx, Own, Reg, Val};
use super::ty::{self, Num, Ty};
use crate::ast::{BinOp, CaseLabel, Expr, ExprKind, StmtKind, SwitchArm, SwitchGroup};
use crate::diag::{code, Span};
use cajeta_bytecode::{Op, Scalar, Type};

/// What a probe rolls back.
struct Snapshot {
    code: usize,
    lines: usize,
    regions: usize,
    diags: usize,
    temps_da: Vec<bool>,
    reachable: bool,
    locals: usize,
    shared: usize,
    index_cache: Vec<(Reg, Reg, u32)>,
    full_exprs: Vec<(u32, Vec<Val>)>,
    cond_flags: Vec<Vec<(Reg, Reg)>>,
}

impl FnBuilder<'_> {
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            code: self.code.len(),
            lines: self.lines.len(),
            regions: self.regions.len(),
            diags: self.diags.len(),
            temps_da: self.da.clone(),
            reachable: self.reachable,
            locals: self.locals.len(),
            shared: self.shared.len(),
            index_cache: self.index_cache.clone(),
            full_exprs: self.full_exprs.clone(),
            cond_flags: self.cond_flags.clone(),
        }
    }

    fn restore(&mut self, s: Snapshot) {
        self.code.truncate(s.code);
        self.lines.truncate(s.lines);
        self.regions.truncate(s.regions);
        self.diags.truncate(s.diags);
        self.da = s.temps_da;
        self.reachable = s.reachable;
        self.locals.truncate(s.locals);
        self.shared.truncate(s.shared);
        self.last_def = None;
        self.index_cache = s.index_cache;
        // Values the probe left to drop at the end of a full expression were never created.
        self.full_exprs = s.full_exprs;
        self.cond_flags = s.cond_flags;
        // Code emitted by the probe is gone: nothing cached from it may survive.
        self.cache_barrier.set(s.code as u32);
    }

    /// The type (and untyped-ness) of `e`, without emitting anything — except the
    /// diagnostics of an `e` that does not type-check: its callers then give up on the whole
    /// construct without evaluating `e` again, so these are the only report of its errors.
    fn probe(&mut self, e: &Expr) -> (Ty, bool, Option<Num>) {
        let snap = self.snapshot();
        let first = snap.diags;
        let v = self.expr(e);
        let out = (v.ty.clone(), v.untyped, v.num());
        let errors = if v.ty == Ty::Error {
            self.diags.split_off(first)
        } else {
            Vec::new()
        };
        self.restore(snap);
        self.diags.extend(errors);
        out
    }

    /// The common type of `?:` arms (and switch-expression arms, array literal elements):
    /// numeric arms unify by LANGUAGE §3.3–3.4; otherwise they share a type or one is `null`.
    fn unify(&mut self, arms: &[(Ty, bool, Option<Num>)], span: Span) -> Option<Ty> {
        if arms.iter().any(|a| a.0 == Ty::Error) {
            return None;
        }
        if arms.iter().all(|a| a.0.is_numeric()) {
            let typed: Vec<Scalar> = arms
                .iter()
                .filter(|a| !a.1)
                .filter_map(|a| a.0.scalar())
                .collect();
            let base = typed.iter().copied().reduce(ty::promote);
            let mut t = match base {
                Some(b) => b,
                None => arms
                    .iter()
                    .filter_map(|a| a.0.scalar())
                    .reduce(ty::promote)?,
            };
            // Untyped constants adopt the typed arms' type when they fit, else promote.
            for a in arms.iter().filter(|a| a.1) {
                let v = Val {
                    ty: a.0.clone(),
                    loc: a.2.map_or(Loc::None, Loc::Num),
                    untyped: true,
                    own: Own::No,
                };
                let adopted = Self::adopt(&v, t);
                t = ty::promote(t, adopted);
            }
            return Some(Ty::Prim(t));
        }
        let non_null: Vec<&Ty> = arms
            .iter()
            .map(|a| &a.0)
            .filter(|t| **t != Ty::Null)
            .collect();
        match non_null.first() {
            None => Some(Ty::Null),
            Some(first)
                if non_null.iter().all(|t| t == first)
                    && (first.is_ref() || arms.iter().all(|a| a.0 != Ty::Null)) =>
            {
                Some((*first).clone())
            }
            _ => {
                // Each type once, in the arms' order: `String and char`.
                let mut names: Vec<String> = Vec::new();
                for a in arms {
                    let n = self.ty_name(&a.0);
                    if !names.contains(&n) {
                        names.push(n);
                    }
                }
                self.error(
                    code::TYPE_MISMATCH,
                    span,
                    format!("incompatible types {}", names.join(" and ")),
                );
                None
            }
        }
    }

    /// Reports the first arm whose value is a `void` call (LANGUAGE §8.4: a void call used
    /// as a value is UNRESOLVED_EXPRESSION, at the call). True if there is one.
    fn void_arm(&mut self, arms: &[(Ty, bool, Option<Num>)], spans: &[Span]) -> bool {
        let Some(k) = arms.iter().position(|a| a.0 == Ty::Void) else {
            return false;
        };
        self.error(
            code::UNRESOLVED_EXPRESSION,
            spans[k],
            "a void call has no value",
        );
        true
    }

    /// An arm's value as the arms' unification sees it: an untyped constant adopts the typed
    /// arms' type (LANGUAGE §3.3: "the arms of `?:` follow the same rule"), which matters
    /// where that type is narrower than the unified one: next to a float16 arm, `0.1` is the
    /// float16 nearest 0.1 before both widen to float32 (§3.4).
    fn arm_constant(&self, v: Val, arms: &[(Ty, bool, Option<Num>)]) -> Val {
        let (true, Some(n)) = (v.untyped, v.num()) else {
            return v;
        };
        let Some(base) = arms
            .iter()
            .filter(|a| !a.1)
            .filter_map(|a| a.0.scalar())
            .reduce(ty::promote)
        else {
            return v;
        };
        let adopted = Self::adopt(&v, base);
        if !adopted.is_half() {
            return v;
        }
        Val {
            ty: Ty::Prim(adopted),
            loc: Loc::Num(ty::cell_num(ty::const_cell(n, adopted), adopted)),
            untyped: false,
            own: Own::No,
        }
    }

    /// The value of a constant boolean condition, found without emitting anything.
    pub(super) fn constant_condition(&mut self, cond: &Expr) -> Option<bool> {
        // Only a constant expression can be one (and probing it allocates no register).
        if !self.is_const_expr(cond, self.class, 0) {
            return None;
        }
        let snap = self.snapshot();
        let v = self.expr(cond);
        self.restore(snap);
        match v.loc {
            Loc::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// `c ? a : b`: evaluates one arm; the value is borrowed (LANGUAGE §6.3). Over constants
    /// it is a constant expression (§5.3): the chosen arm's value in the unified type,
    /// untyped when both arms are.
    pub fn ternary(&mut self, cond: &Expr, then: &Expr, els: &Expr, span: Span) -> Val {
        if let Some(pick) = self.constant_condition(cond) {
            let (a, b) = (self.probe(then), self.probe(els));
            if let (Some(x), Some(y)) = (a.2, b.2) {
                let untyped = a.1 && b.1;
                let arms = [a, b];
                let Some(t) = self.unify(&arms, span) else {
                    return Val::error();
                };
                if let Some(s) = t.scalar().filter(|s| s.is_numeric()) {
                    let chosen = &arms[usize::from(!pick)];
                    let v = Val {
                        ty: chosen.0.clone(),
                        loc: Loc::Num(if pick { x } else { y }),
                        untyped: chosen.1,
                        own: Own::No,
                    };
                    let v = self.arm_constant(v, &arms);
                    let (Some(n), Some(from)) = (v.num(), v.ty.scalar()) else {
                        return Val::error();
                    };
                    let cell = ty::const_cell(n, from);
                    let n = ty::cell_num(ty::const_cell(ty::cell_num(cell, from), s), s);
                    return Val {
                        ty: t,
                        loc: Loc::Num(n),
                        untyped,
                        own: Own::No,
                    };
                }
            }
        }
        let (c, when_true, when_false) = self.cond(cond);
        let before = self.da.clone();
        self.da = when_true.clone();
        let a = self.probe(then);
        self.da = when_false.clone();
        let b = self.probe(els);
        self.da = before;
        let arms = [a, b];
        if self.void_arm(&arms, &[then.span, els.span]) {
            return Val::error();
        }
        let Some(t) = self.unify(&arms, span) else {
            return Val::error();
        };
        // `c ? null : null` is the null constant (after the condition's effects).
        if t == Ty::Null {
            return Val::null();
        }
        let d = match t {
            Ty::Vector(s, n) => self.vec_block(s, n as usize),
            _ => self.temp(t.reg()),
        };
        let titles = self.arm_titles(&t);
        let jf = self.emit_bc(Op::JmpIfNot, c.unwrap_or(0), 0);
        let header = jf as u32;
        self.da = when_true;
        self.enter_conditional();
        let v = self.expr(then);
        self.arm_title(titles, v.own);
        let v = self.arm_constant(v, &arms);
        if let Some(r) = self.coerce(v, &t, then.span) {
            self.move_lanes(d, r, &t);
        }
        let then_flags = self.leave_conditional();
        let da_then = self.da.clone();
        let jend = self.emit_bc(Op::Jmp, 0, 0);
        let pc = self.pc();
        self.patch(jf, pc);
        self.da = when_false;
        // Each arm's path clears the other arm's drop flags.
        self.clear_flags(&then_flags);
        self.enter_conditional();
        let v = self.expr(els);
        self.arm_title(titles, v.own);
        let v = self.arm_constant(v, &arms);
        if let Some(r) = self.coerce(v, &t, els.span) {
            self.move_lanes(d, r, &t);
        }
        let else_flags = self.leave_conditional();
        let jend = self.clearing_edge(jend, &else_flags);
        let merge = self.pc();
        self.patch(jend, merge);
        self.region(cajeta_bytecode::RegionKind::If, header, 0, merge);
        for (x, y) in self.da.iter_mut().zip(da_then) {
            *x = *x && y;
        }
        self.drop_arm_titles(titles, d, &t);
        Val::reg(t, d)
    }

    /// The flag of a `?:` or switch expression of an owned kind `t`: its value is a borrow
    /// (LANGUAGE §6.3), so an object an arm created is stored nowhere and drops at the end of
    /// the full expression (§6.4). The flag, false before the arms, tells whether the arm
    /// that ran created its value.
    fn arm_titles(&mut self, t: &Ty) -> Option<Reg> {
        if !t.is_owned_kind() || self.device {
            return None;
        }
        let f = self.temp(Type::BOOL);
        self.load_bits_into(f, Type::BOOL, 0);
        Some(f)
    }

    /// Records in the flag whether the arm's value `own` is owned.
    fn arm_title(&mut self, flag: Option<Reg>, own: Own) {
        match (flag, own) {
            (Some(f), Own::Yes) => self.load_bits_into(f, Type::BOOL, 1),
            (Some(f), Own::Dyn(g)) => {
                self.emit(Op::Mov, f, g, 0);
            }
            _ => {}
        }
    }

    /// Drops the expression's value `d` at the end of the full expression if the arm that
    /// ran created it.
    fn drop_arm_titles(&mut self, flag: Option<Reg>, d: Reg, t: &Ty) {
        if let Some(f) = flag {
            self.drop_at_end(Val {
                ty: t.clone(),
                loc: Loc::Reg(d),
                untyped: false,
                own: Own::Dyn(f),
            });
        }
    }

    /// `++x`, `--x` (prefix: the new value) and `x++`, `x--` (postfix: the old value), the
    /// target evaluated once as for `op=` (LANGUAGE §8.3).
    pub fn inc_dec(&mut self, target: &Expr, inc: bool, prefix: bool, span: Span) -> Val {
        // An error of the store is at the construct's first character (LANGUAGE §10.1): the
        // `++` of `++k`, the target of `k++`.
        let at = if prefix { span } else { target.span };
        let Some(place) = self.place_at(target, at) else {
            return Val::error();
        };
        if let Place::Static(si) = place {
            self.check_final_static(si, at);
        }
        let ty = self.place_ty(&place);
        let Some(s) = ty.scalar().filter(|s| s.is_numeric()) else {
            let n = self.ty_name(&ty);
            self.error(
                code::TYPE_MISMATCH,
                span,
                format!("'++'/'--' need an integer or float target, found {n}"),
            );
            return Val::error();
        };
        let cur = self.load_place(&place, target.span);
        let Some(cur_r) = self.materialize(&cur) else {
            return Val::error();
        };
        // The old value must survive the store when it is the result.
        let old = if prefix {
            None
        } else {
            let o = self.temp(Type::Scalar(s));
            self.emit(Op::Mov, o, cur_r, 0);
            Some(o)
        };
        let one = Val {
            ty: Ty::Prim(Scalar::I32),
            loc: Loc::Num(Num::Int(1)),
            untyped: true,
            own: Own::No,
        };
        let op = if inc { BinOp::Add } else { BinOp::Sub };
        let sum = self.binary_vals(op, Val::reg(ty.clone(), cur_r), one, span);
        let new = match sum.ty.scalar() {
            Some(from) if from != s => match self.materialize(&sum) {
                Some(r) => Val::reg(ty.clone(), self.convert(r, from, s)),
                None => return Val::error(),
            },
            _ => sum,
        };
        let stored = self.store_place(place, ty.clone(), new, span, span, at);
        match old {
            Some(o) => Val::reg(ty, o),
            None => stored,
        }
    }

    /// `[a, b, c]`, or `heap T[] {a, b}` (with `elem`): a new owned array. Without a target
    /// type the element type unifies like `?:` arms.
    pub fn array_literal(&mut self, items: &[Expr], elem: Option<Ty>, span: Span) -> Val {
        if !self.host_only("an array literal", span) {
            return Val::error();
        }
        // Without a target, the elements' probes (their constants adopt the typed ones').
        let mut inferred = None;
        let elem = match elem {
            Some(t) => t,
            None => {
                if items.is_empty() {
                    self.error(
                        code::TYPE_MISMATCH,
                        span,
                        "an empty array literal needs a target type",
                    );
                    return Val::error();
                }
                let arms: Vec<_> = items.iter().map(|e| self.probe(e)).collect();
                let spans: Vec<Span> = items.iter().map(|e| e.span).collect();
                if self.void_arm(&arms, &spans) {
                    return Val::error();
                }
                inferred = Some(arms.clone());
                match self.unify(&arms, span) {
                    Some(Ty::Null) | Some(Ty::Void) | None => {
                        if !arms.iter().any(|a| a.0 == Ty::Error) {
                            self.error(
                                code::TYPE_MISMATCH,
                                span,
                                "cannot infer the element type of this array literal",
                            );
                        }
                        return Val::error();
                    }
                    Some(t) => t,
                }
            }
        };
        let ty = Ty::Array(Box::new(elem.clone()));
        let len = self.load_bits(Type::I64, items.len() as u64);
        let arr = self.new_reg(ty.reg());
        self.set_pos(span);
        self.emit(Op::NewArr, arr, len, 0);
        let set = match elem.elem_scalar() {
            Some(s) => super::expr::typed_op("aset", s).expect("aset"),
            None => Op::ArrSetRef,
        };
        for (i, e) in items.iter().enumerate() {
            let v = self.expr_for(e, &elem);
            let v = match &inferred {
                Some(arms) => self.arm_constant(v, arms),
                None => v,
            };
            // An element of an owned kind takes the title of a fresh value (`heap C()`), as an
            // element assignment does.
            let own = v.own;
            let Some(r) = self.coerce(v, &elem, e.span) else {
                continue;
            };
            let idx = self.load_bits(Type::I64, i as u64);
            if elem.elem_scalar().is_some() {
                self.emit(set, arr, idx, r);
            } else {
                self.init_elem(arr, idx, r, own, &elem);
            }
        }
        Val {
            ty,
            loc: Loc::Reg(arr),
            untyped: false,
            own: Own::Yes,
        }
    }

    /// A case label's constant: its cell in the selector's type, or `None` after a diagnostic.
    fn case_constant(&mut self, e: &Expr, sel: &Ty) -> Option<(u64, Option<String>)> {
        // Under an enum selector a bare constant name is that enum's constant (`case Unified:`,
        // as in Java), unless a variable of that name is in scope.
        if let (Ty::Enum(en), ExprKind::Name(id)) = (sel, &e.kind) {
            if self.lookup_local(&id.name).is_none() {
                if let Some(o) = en.constants().iter().position(|c| *c == id.name) {
                    return Some((o as u64, None));
                }
            }
        }
        let v = self.expr(e);
        let konst = match (&v.loc, sel) {
            (Loc::Num(n), Ty::Prim(s)) if s.is_int() => {
                let fits = match n {
                    Num::Int(i) => ty::int_fits(*i, *s),
                    Num::Float(_) | Num::Dec(..) => false,
                };
                fits.then(|| ty::const_cell(*n, *s))
            }
            (Loc::Char(c), Ty::Prim(Scalar::Char)) => Some(*c as u64),
            (Loc::Enum(o), Ty::Enum(_)) if v.ty == *sel => Some(*o as u64),
            _ => None,
        };
        if konst.is_none() {
            if let (Loc::Str(text), Ty::Str) = (&v.loc, sel) {
                // Strings compare by contents at run time.
                return Some((u64::MAX, Some(text.to_string())));
            }
            if v.ty == *sel {
                self.error(
                    code::TYPE_MISMATCH,
                    e.span,
                    "a case label must be a constant expression (§7)",
                );
            } else if v.ty != Ty::Error {
                let (a, b) = (self.ty_name(&v.ty), self.ty_name(sel));
                self.error(code::TYPE_MISMATCH, e.span, format!("case label of type {a} does not match the selector type {b} (or is not a constant)"));
            }
        }
        konst.map(|k| (k, None))
    }

    /// A second `default` label in one switch is a duplicate label (§7).
    fn check_one_default<'l>(&mut self, labels: impl Iterator<Item = &'l CaseLabel>) {
        let mut seen = false;
        for l in labels {
            if let CaseLabel::Default(at) = l {
                if seen {
                    self.error(code::DUPLICATE_CASE, *at, "duplicate default label");
                }
                seen = true;
            }
        }
    }

    /// Emits `if selector == label then jump` for each label; returns the jumps to patch.
    fn case_tests(
        &mut self,
        sel_reg: Reg,
        sel: &Ty,
        labels: &[CaseLabel],
        seen: &mut Vec<(u64, Option<String>)>,
    ) -> Vec<usize> {
        let mut jumps = vec![];
        for l in labels {
            let CaseLabel::Case(e) = l else { continue };
            let Some(key) = self.case_constant(e, sel) else {
                continue;
            };
            if seen.contains(&key) {
                self.error(code::DUPLICATE_CASE, e.span, "duplicate case label");
                continue;
            }
            seen.push(key.clone());
            let b = self.temp(Type::BOOL);
            match (&key.1, sel) {
                (Some(s), _) => {
                    let r = self.load_str(s);
                    self.emit(Op::EqStr, b, sel_reg, r);
                }
                (None, Ty::Prim(s)) => {
                    let r = self.load_bits(Type::Scalar(*s), key.0);
                    self.emit(super::expr::typed_op("eq", *s).expect("eq"), b, sel_reg, r);
                }
                (None, _) => {
                    let r = self.load_bits(Type::I32, key.0);
                    self.emit(Op::EqI32, b, sel_reg, r);
                }
            }
            jumps.push(self.emit_bc(Op::JmpIf, b, 0));
        }
        jumps
    }

    /// The selector of a switch: integer, char, String or enum.
    fn switch_selector(&mut self, selector: &Expr) -> Option<(Ty, Reg)> {
        let v = self.expr(selector);
        let ok = v.ty.is_int() || matches!(v.ty, Ty::Prim(Scalar::Char) | Ty::Str | Ty::Enum(_));
        if !ok {
            if v.ty != Ty::Error && !self.void_value(&v, selector.span) {
                let n = self.ty_name(&v.ty);
                self.error(
                    code::TYPE_MISMATCH,
                    selector.span,
                    format!(
                        "a switch selector must be an integer, char, String or enum, found {n}"
                    ),
                );
            }
            return None;
        }
        let r = self.materialize(&v)?;
        // The selector lives across the case tests: copy it out of the statement's temporaries.
        let keep = self.new_reg(v.ty.reg());
        self.emit(Op::Mov, keep, r, 0);
        Some((v.ty, keep))
    }

    /// The statement form: stacked labels, fall-through, `break` leaves the switch.
    pub fn switch_stmt(&mut self, selector: &Expr, groups: &[SwitchGroup], _span: Span) {
        let Some((sel, r)) = self.full_expr(|b| b.switch_selector(selector)) else {
            return;
        };
        // A test jumps past the declarations of earlier groups, whose locals stay in scope:
        // their owns-flags must be clear on every way in, so they are cleared here, before
        // the dispatch (LANGUAGE §6.2, §6.5: nothing that was never created drops).
        for g in groups {
            for s in &g.body {
                let StmtKind::Local(d) = &s.kind else {
                    continue;
                };
                let Ok(t) = self.p.resolve_type(self.unit, &d.ty) else {
                    continue;
                };
                if t.is_owned_kind() {
                    for var in &d.vars {
                        // The value too: a drop reads it, and V-DEF cannot see that the
                        // clear flag guards that read.
                        let v = self.new_reg(t.reg());
                        self.clear_reg(v, t.reg());
                        let f = self.new_reg(Type::BOOL);
                        self.emit_bc(Op::LoadI, f, 0);
                        self.preset_flags.push((var.name.span, v, f));
                    }
                }
            }
        }
        self.end_statement();
        self.check_one_default(groups.iter().flat_map(|g| &g.labels));
        let mut seen = vec![];
        let tests: Vec<Vec<usize>> = groups
            .iter()
            .map(|g| self.case_tests(r, &sel, &g.labels, &mut seen))
            .collect();
        let default = groups
            .iter()
            .position(|g| g.labels.iter().any(|l| matches!(l, CaseLabel::Default(_))));
        let jdefault = self.emit_bc(Op::Jmp, 0, 0);
        self.end_statement();
        let entry_da = self.da.clone();
        let depth = self.scopes.len();
        self.loops.push(LoopCtx {
            label: None,
            depth,
            body_depth: depth,
            breaks: vec![],
            continues: vec![],
            break_da: vec![],
            continue_da: vec![],
            is_switch: true,
        });
        // The switch block: its groups' statements are directly in it.
        self.push_block_scope();
        let mut starts = vec![];
        for g in groups {
            starts.push(self.pc());
            // Each group is entered from a test (or falls through from the previous one). A
            // local declared in an earlier group is in scope here; a test's jump skipped its
            // declaration: not assigned, and (a final one) definitely unassigned.
            // Only a group the previous one falls into shares that one's facts.
            let falls_through = self.reachable;
            self.reachable = true;
            let mut merged = entry_da.clone();
            merged.resize(self.da.len(), false);
            // (Only the switch's own locals: those of closed scopes, such as an inlined
            // call's parameters, name facts that no longer exist.)
            for scope in &self.scopes[depth..] {
                for &li in &scope.locals {
                    let u = self.locals[li].unassigned;
                    if let Some(u) = u.filter(|&u| u >= entry_da.len() && u < merged.len()) {
                        merged[u] = true;
                    }
                }
            }
            if falls_through {
                for (m, d) in merged.iter_mut().zip(&self.da) {
                    *m = *m && *d;
                }
            }
            self.da = merged;
            self.block_stmts(&g.body);
        }
        self.pop_scope();
        let end = self.pc();
        let ctx = self.loops.pop().expect("switch");
        for (g, jumps) in tests.iter().enumerate() {
            for &j in jumps {
                self.patch(j, starts[g]);
            }
        }
        self.patch(jdefault, default.map_or(end, |d| starts[d]));
        for j in &ctx.breaks {
            self.patch(*j, end);
        }
        // After the switch: from the end of the last group, a `break`, or no matching label.
        let mut da = if self.reachable {
            self.da.clone()
        } else {
            vec![true; self.da.len()]
        };
        let mut reach = self.reachable || !ctx.breaks.is_empty();
        for bd in ctx.break_da {
            for (x, y) in da.iter_mut().zip(bd) {
                *x = *x && y;
            }
        }
        if default.is_none() {
            reach = true;
            for (x, y) in da.iter_mut().zip(&entry_da) {
                *x = *x && *y;
            }
        }
        self.da = da;
        self.reachable = reach;
    }

    /// The expression form: no fall-through, `default` required, arms unified like `?:`.
    pub fn switch_expr(&mut self, selector: &Expr, arms: &[SwitchArm], span: Span) -> Val {
        if !arms
            .iter()
            .any(|a| a.labels.iter().any(|l| matches!(l, CaseLabel::Default(_))))
        {
            self.error(
                code::SYNTAX,
                span,
                "a switch expression needs a default arm",
            );
            return Val::error();
        }
        let Some((sel, r)) = self.switch_selector(selector) else {
            return Val::error();
        };
        let entry_da = self.da.clone();
        let types: Vec<_> = arms.iter().map(|a| self.probe(&a.value)).collect();
        let spans: Vec<Span> = arms.iter().map(|a| a.value.span).collect();
        if self.void_arm(&types, &spans) {
            return Val::error();
        }
        let Some(t) = self.unify(&types, span) else {
            return Val::error();
        };
        // Every arm `null`: the null constant (the selector is evaluated above).
        if t == Ty::Null {
            return Val::null();
        }
        let d = self.temp(t.reg());
        let titles = self.arm_titles(&t);
        self.check_one_default(arms.iter().flat_map(|a| &a.labels));
        let mut seen = vec![];
        let tests: Vec<Vec<usize>> = arms
            .iter()
            .map(|a| self.case_tests(r, &sel, &a.labels, &mut seen))
            .collect();
        let default = arms
            .iter()
            .position(|a| a.labels.iter().any(|l| matches!(l, CaseLabel::Default(_))))
            .unwrap_or(0);
        let jdefault = self.emit_bc(Op::Jmp, 0, 0);
        let mut starts = vec![];
        let mut ends = vec![];
        let mut da_out: Option<Vec<bool>> = None;
        let mut arm_flags: Vec<Vec<(Reg, Reg)>> = Vec::new();
        for a in arms {
            starts.push(self.pc());
            self.da = entry_da.clone();
            self.enter_conditional();
            let v = self.expr(&a.value);
            self.arm_title(titles, v.own);
            let v = self.arm_constant(v, &types);
            if let Some(x) = self.coerce(v, &t, a.value.span) {
                self.move_into(d, x);
            }
            arm_flags.push(self.leave_conditional());
            da_out = Some(match da_out {
                None => self.da.clone(),
                Some(prev) => prev.iter().zip(&self.da).map(|(x, y)| *x && *y).collect(),
            });
            ends.push(self.emit_bc(Op::Jmp, 0, 0));
        }
        // Each arm's path clears the other arms' drop flags, on its way to the end.
        let mut to_end = Vec::new();
        for (k, &j) in ends.iter().enumerate() {
            let others: Vec<(Reg, Reg)> = arm_flags
                .iter()
                .enumerate()
                .filter(|&(m, _)| m != k)
                .flat_map(|(_, f)| f.iter().copied())
                .collect();
            if others.is_empty() {
                to_end.push(j);
                continue;
            }
            let stub = self.pc();
            self.patch(j, stub);
            self.clear_flags(&others);
            to_end.push(self.emit_bc(Op::Jmp, 0, 0));
        }
        let end = self.pc();
        for (g, jumps) in tests.iter().enumerate() {
            for &j in jumps {
                self.patch(j, starts[g]);
            }
        }
        self.patch(jdefault, starts[default]);
        for j in to_end {
            self.patch(j, end);
        }
        self.da = da_out.unwrap_or(entry_da);
        self.drop_arm_titles(titles, d, &t);
        Val::reg(t, d)
    }
}
