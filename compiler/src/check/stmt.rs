//! Lowering of statements: blocks, declarations, `if`, loops, `break`/`continue`, `return`,
//! with definite assignment (LANGUAGE §7) and drops at every scope exit (§6.4).

use super::func::{FnBuilder, Loc, LoopCtx, Own, Reg, Val};
use super::ty::Ty;
use crate::ast::{Expr, ExprKind, ForInit, LocalDecl, Stmt, StmtKind};
use crate::diag::{code, Span};
use cajeta_bytecode::Scalar;
use cajeta_bytecode::{Op, RegionKind, Type};

impl FnBuilder<'_> {
    /// Lowers statements in the current scope.
    pub fn block_stmts(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    /// Lowers one statement.
    pub fn stmt(&mut self, s: &Stmt) {
        self.set_pos(s.span);
        let label = self.pending_label.take();
        match &s.kind {
            StmtKind::Local(d) => self.local_decl(d),
            StmtKind::Expr(e) => {
                // XPU-K02 (a): `v.free();` while a launch borrow of `v` is pending here.
                if let ExprKind::Call {
                    target: Some(t),
                    name,
                    args,
                    ..
                } = &e.kind
                {
                    if let (ExprKind::Name(id), "free", true) =
                        (&t.kind, name.name.as_str(), args.is_empty())
                    {
                        if let Some(li) = self.lookup_local(&id.name) {
                            self.check_free_borrowed(li, e.span);
                        }
                    }
                }
                self.launch_statement = matches!(e.kind, ExprKind::Invoke { .. });
                self.synced = false;
                self.begin_full_expr();
                let v = self.expr(e);
                self.launch_statement = false;
                // `s.sync()` as a statement releases this block's launch borrows.
                if self.synced {
                    self.release_borrows();
                }
                self.drop_unstored(&v);
                self.end_full_expr();
            }
            StmtKind::Block(b) => {
                self.push_block_scope();
                self.block_stmts(&b.stmts);
                self.pop_scope_at(Some(super::func::closing_brace(b.span)));
            }
            StmtKind::Empty => {}
            StmtKind::If { cond, then, els } => self.if_stmt(cond, then, els.as_deref()),
            StmtKind::While { cond, body } => self.while_stmt(label, Some(cond), body, None, false),
            StmtKind::DoWhile { body, cond } => {
                self.while_stmt(label, Some(cond), body, None, true)
            }
            StmtKind::For {
                init,
                cond,
                update,
                body,
            } => {
                self.push_scope();
                match init {
                    Some(ForInit::Local(d)) => self.local_decl(d),
                    Some(ForInit::Exprs(es)) => {
                        for e in es {
                            self.full_expr(|b| {
                                let v = b.expr(e);
                                b.drop_unstored(&v);
                            });
                        }
                    }
                    None => {}
                }
                self.end_statement();
                self.while_stmt(label, cond.as_ref(), body, Some(update), false);
                // The init's locals drop where the statement ends.
                self.set_pos(super::func::closing_brace(s.span));
                self.pop_scope();
            }
            StmtKind::Labeled { label, body } => {
                if self
                    .loops
                    .iter()
                    .any(|l| l.label.as_deref() == Some(&label.name))
                {
                    self.error(
                        code::SYNTAX,
                        label.span,
                        format!("label '{}' is already in use", label.name),
                    );
                }
                let is_loop = matches!(
                    body.kind,
                    StmtKind::While { .. }
                        | StmtKind::DoWhile { .. }
                        | StmtKind::For { .. }
                        | StmtKind::ForEach { .. }
                );
                if !is_loop {
                    self.error(code::SYNTAX, label.span, "a label must name a loop");
                }
                self.pending_label = Some(label.name.clone());
                self.stmt(body);
                self.pending_label = None;
            }
            StmtKind::Break(label) => self.jump_out(label.as_ref(), s.span, true),
            StmtKind::Continue(label) => self.jump_out(label.as_ref(), s.span, false),
            StmtKind::Return { value, transfer } => {
                self.return_stmt(value.as_ref(), *transfer, s.span)
            }
            StmtKind::ForEach {
                index,
                finals,
                ty,
                name,
                iterable,
                body,
            } => self.for_each(label, index.as_ref(), *finals, ty, name, iterable, body),
            StmtKind::Switch { selector, groups } => self.switch_stmt(selector, groups, s.span),
        }
        self.end_statement();
    }

    /// Starts a full expression: the owned values [`FnBuilder::drop_at_end`] is given while
    /// it is lowered drop where it ends ([`FnBuilder::end_full_expr`]).
    pub fn begin_full_expr(&mut self) {
        self.full_exprs.push((self.conditional, Vec::new()));
    }

    /// Ends the innermost full expression: drops what waited for it, last created first.
    pub fn end_full_expr(&mut self) {
        if let Some((_, waiting)) = self.full_exprs.pop() {
            for v in waiting.iter().rev() {
                self.drop_unstored(v);
            }
        }
    }

    /// Runs `lower` as one full expression (a statement's expression, or a condition).
    pub fn full_expr<T>(&mut self, lower: impl FnOnce(&mut Self) -> T) -> T {
        self.begin_full_expr();
        let out = lower(self);
        self.end_full_expr();
        out
    }

    /// Drops owned value `v`, stored nowhere, at the end of the innermost full expression
    /// (LANGUAGE §6.4: the receiver of `heap T(…).m()` lives to the end of its statement) —
    /// or now, where there is no full expression (field initialisers, device code). A value
    /// created in a conditional operand the full expression encloses may not exist where it
    /// ends: a flag, set here and cleared on the paths that skip the operand
    /// ([`FnBuilder::leave_conditional`]), guards its drop.
    pub fn drop_at_end(&mut self, v: Val) {
        let depth = match self.full_exprs.last() {
            Some(&(depth, _)) if !self.device => depth,
            _ => return self.drop_unstored(&v),
        };
        let v = if depth < self.conditional {
            let Some(value) = self.reg_of(&v).filter(|_| v.ty.is_owned_kind()) else {
                return;
            };
            let f = self.temp(Type::BOOL);
            match v.own {
                Own::No => return,
                Own::Yes => self.load_bits_into(f, Type::BOOL, 1),
                Own::Dyn(g) => {
                    self.emit(Op::Mov, f, g, 0);
                }
            }
            if let Some(flags) = self.cond_flags.last_mut() {
                flags.push((f, value));
            }
            Val {
                own: Own::Dyn(f),
                ..v
            }
        } else {
            v
        };
        if let Some((_, waiting)) = self.full_exprs.last_mut() {
            waiting.push(v);
        }
    }

    /// Starts lowering a conditionally evaluated operand (see [`FnBuilder::conditional`]).
    pub fn enter_conditional(&mut self) {
        self.conditional += 1;
        self.cond_flags.push(Vec::new());
    }

    /// Ends a conditional operand: returns the (drop flag, value) registers of the values
    /// created in it, which the caller clears on the paths that skip it. They are the enclosing operand's too,
    /// when that one lies inside the same full expression.
    pub fn leave_conditional(&mut self) -> Vec<(Reg, Reg)> {
        self.conditional -= 1;
        let flags = self.cond_flags.pop().unwrap_or_default();
        let inside = self
            .full_exprs
            .last()
            .is_some_and(|&(depth, _)| depth < self.conditional);
        if inside {
            if let Some(outer) = self.cond_flags.last_mut() {
                outer.extend(&flags);
            }
        }
        flags
    }

    /// Clears drop flags and their values (on a path where the values were not created): the
    /// drop reads the value, and V-DEF cannot see that the clear flag guards that read.
    pub fn clear_flags(&mut self, flags: &[(Reg, Reg)]) {
        for &(f, value) in flags {
            self.load_bits_into(f, Type::BOOL, 0);
            self.clear_reg(value, self.regs[usize::from(value)]);
        }
    }

    /// Makes the pending forward `jump` (still to be patched to the merge point) clear
    /// `flags` on its way, through a stub emitted here that the code falling through skips.
    /// Returns the jump to patch to the merge point: `jump` itself when there is nothing to
    /// clear.
    pub fn clearing_edge(&mut self, jump: usize, flags: &[(Reg, Reg)]) -> usize {
        if flags.is_empty() {
            return jump;
        }
        let over = self.emit_bc(Op::Jmp, 0, 0);
        let stub = self.pc();
        self.patch(jump, stub);
        self.clear_flags(flags);
        over
    }

    /// Drops an owned value that is stored nowhere (LANGUAGE §6.4).
    pub fn drop_unstored(&mut self, v: &Val) {
        if !v.ty.is_owned_kind() {
            return;
        }
        let Some(r) = self.reg_of(v) else {
            return;
        };
        match v.own {
            Own::No => {}
            Own::Yes => {
                let t = self.load_bool(true);
                self.emit_drop(r, t, &v.ty);
            }
            Own::Dyn(f) => {
                self.emit_drop(r, f, &v.ty);
            }
        }
    }

    /// Keeps owned value `v` (stored nowhere) in a hidden local of the current scope, which
    /// drops it when the scope closes; returns that local's register (`None`: `v` owns
    /// nothing, and nothing is kept).
    fn hold_to_scope_end(&mut self, v: &Val, span: Span) -> Option<Reg> {
        let r = self.reg_of(v)?;
        if v.own == Own::No || !v.ty.is_owned_kind() {
            return None;
        }
        let held = self.new_reg(v.ty.reg());
        self.emit(Op::Mov, held, r, 0);
        let f = self.new_reg(Type::BOOL);
        match v.own {
            Own::Dyn(o) => self.emit(Op::Mov, f, o, 0),
            _ => self.emit_bc(Op::LoadI, f, 1),
        };
        // A hidden name of its own: a scope may hold several.
        let name = format!("$held{held}");
        if let Some(li) = self.add_local(&name, v.ty.clone(), held, true, span) {
            self.locals[li].flag = Some(f);
            self.mark_assigned(li);
        }
        Some(held)
    }

    fn reg_of(&self, v: &Val) -> Option<u16> {
        match v.loc {
            super::func::Loc::Reg(r) => Some(r),
            _ => None,
        }
    }

    fn local_decl(&mut self, d: &LocalDecl) {
        let mut refused = false;
        let mut ty = match self.p.resolve_type(self.unit, &d.ty) {
            Ok(t) => t,
            Err(diag) => {
                self.diags.push(diag);
                Ty::Error
            }
        };
        match (&ty, self.device) {
            (Ty::Shared(_), false) => {
                self.error(
                    code::XPU_K03,
                    d.ty.span,
                    "Shared<T> variables exist only in @Kernel code",
                );
                return;
            }
            (
                Ty::Buffer(_)
                | Ty::Stream
                | Ty::Event
                | Ty::Str
                | Ty::Array(_)
                | Ty::Class(_)
                | Ty::Enum(_),
                true,
            ) => {
                let n = self.ty_name(&ty);
                self.error(
                    code::XPU_N01,
                    d.ty.span,
                    format!("device code cannot declare {n} variables"),
                );
                // Declared all the same, untyped and without its initialiser: its uses
                // raise nothing more.
                ty = Ty::Error;
                refused = true;
            }
            _ => {}
        }
        for var in &d.vars {
            self.set_pos(var.name.span);
            let preset = self
                .preset_flags
                .iter()
                .position(|&(s, _, _)| s == var.name.span)
                .map(|k| self.preset_flags.swap_remove(k));
            let reg = match (ty.clone(), preset) {
                (_, Some((_, v, _))) => v,
                (Ty::Vector(s, n), None) => self.vec_block(s, n as usize),
                _ => self.new_reg(ty.reg()),
            };
            let Some(li) =
                self.add_local(&var.name.name, ty.clone(), reg, d.is_final, var.name.span)
            else {
                continue;
            };
            if ty.is_owned_kind() {
                let f = match preset {
                    Some((_, _, f)) => f,
                    None => self.new_reg(Type::BOOL),
                };
                self.locals[li].flag = Some(f);
                self.emit_bc(Op::LoadI, f, 0);
            }
            if refused {
                self.mark_assigned(li);
                continue;
            }
            if let Some(init) = &var.init {
                let mut placed = init;
                while let ExprKind::Paren(inner) = &placed.kind {
                    placed = inner;
                }
                if matches!(ty, Ty::Shared(_))
                    && !matches!(placed.kind, ExprKind::SharedArray { .. })
                {
                    // XPU §2.6: each declaration denotes its own workgroup array; a Shared is
                    // never stored (an alias, or one chosen by `?:`).
                    self.error(
                        code::XPU_N01,
                        init.span,
                        "a Shared variable is initialised only by a `shared T[n]` placement",
                    );
                    self.mark_assigned(li);
                    continue;
                }
                self.begin_full_expr();
                let v = self.expr_for(init, &ty);
                let v = if var.transfer {
                    self.transfer_name(init, v)
                } else {
                    v
                };
                self.store_local(li, v, init.span, true);
                self.end_full_expr();
                // Even a failed initialiser counts as an assignment: no cascading errors.
                self.mark_assigned(li);
            } else if !matches!(ty, Ty::Error | Ty::Shared(_)) {
                // Not yet assigned (LANGUAGE's definite assignment forbids reading it), but
                // written all the same: the verifier's V-DEF cannot follow the language's
                // rules through `&&`, `||` and `?:`, and a drop at the first assignment
                // reads the old value.
                for k in 0..ty.lanes() {
                    self.clear_reg(reg + k as u16, ty.reg());
                }
            }
            self.end_statement();
        }
    }

    /// `x #= v` with `v` a plain name means `x = #v` (LANGUAGE §6.3).
    pub fn transfer_name(&mut self, e: &Expr, v: Val) -> Val {
        if let ExprKind::Name(_) = e.kind {
            return self.take_title(e, v);
        }
        v
    }

    fn if_stmt(&mut self, cond: &Expr, then: &Stmt, els: Option<&Stmt>) {
        let (c, when_true, when_false) = self.full_expr(|b| b.cond(cond));
        let header = self.pc();
        let jf = self.emit_bc(Op::JmpIfNot, c.unwrap_or(0), 0);
        self.end_statement();
        let before = when_false;
        self.da = when_true;
        self.push_scope();
        self.stmt(then);
        self.pop_scope();
        let (then_da, then_reach) = (self.da.clone(), self.reachable);
        if let Some(els) = els {
            let jend = self.emit_bc(Op::Jmp, 0, 0);
            let pc = self.pc();
            self.patch(jf, pc);
            self.da = before;
            self.reachable = true;
            self.push_scope();
            self.stmt(els);
            self.pop_scope();
            let pc = self.pc();
            self.patch(jend, pc);
            self.merge_flow(then_da, then_reach);
        } else {
            let pc = self.pc();
            self.patch(jf, pc);
            self.da = before.clone();
            self.reachable = true;
            self.merge_flow(then_da, then_reach);
        }
        let merge = self.pc();
        self.region(RegionKind::If, header, 0, merge);
    }

    /// Joins the current flow with another (`other_da`, `other_reach`).
    pub fn merge_flow(&mut self, other_da: Vec<bool>, other_reach: bool) {
        match (self.reachable, other_reach) {
            (true, true) => {
                for (a, b) in self.da.iter_mut().zip(other_da) {
                    *a = *a && b;
                }
            }
            (false, true) => {
                self.da = other_da;
                self.reachable = true;
            }
            (true, false) => {}
            (false, false) => {}
        }
    }

    /// For-each over an array (T2) and the grid-stride loop `for (I i, T v : buf.range(n))`
    /// of device code (XPU §3.5). Both count with an int64 `k`: from 0 by 1 below `count()`,
    /// or from `globalIdX()` by `gx · bx` below `n` (computed in 64 bits, so it never wraps).
    #[allow(clippy::too_many_arguments)]
    fn for_each(
        &mut self,
        label: Option<String>,
        index: Option<&(crate::ast::TypeExpr, crate::ast::Ident)>,
        (index_final, elem_final): (bool, bool),
        ty: &crate::ast::TypeExpr,
        name: &crate::ast::Ident,
        iterable: &Expr,
        body: &Stmt,
    ) {
        let elem_decl = match self.p.resolve_type(self.unit, ty) {
            Ok(t) => t,
            Err(d) => {
                self.diags.push(d);
                return;
            }
        };
        let index_ty = match index {
            Some((t, _)) => match self.p.resolve_type(self.unit, t) {
                Ok(t) if t.is_int() => Some(t),
                Ok(t) => {
                    let n = self.ty_name(&t);
                    self.error(
                        code::TYPE_MISMATCH,
                        index.map_or(name.span, |i| i.0.span),
                        format!("a for-each index must be an integer, found {n}"),
                    );
                    return;
                }
                Err(d) => {
                    self.diags.push(d);
                    return;
                }
            },
            None => None,
        };
        let range = match &iterable.kind {
            ExprKind::Call {
                target: Some(t),
                name: r,
                args,
                ..
            } if r.name == "range" => Some((t, args)),
            _ => None,
        };
        self.push_scope();
        let i64t = Type::I64;
        let k = self.new_reg(i64t);
        let limit = self.new_reg(i64t);
        let src;
        let elem: Ty;
        let mut stride = None;
        let mut unsigned_limit = false;
        if let Some((t, args)) = range {
            let b = self.expr(t);
            let Ty::Buffer(s) = b.ty else {
                if b.ty != Ty::Error {
                    let n = self.ty_name(&b.ty);
                    self.error(
                        code::TYPE_MISMATCH,
                        t.span,
                        format!("range() needs a KernelBuffer, found {n}"),
                    );
                }
                self.pop_scope();
                return;
            };
            if !self.device {
                self.error(
                    code::XPU_K04,
                    iterable.span,
                    "the grid-stride loop is only available in device code",
                );
                self.pop_scope();
                return;
            }
            if index.is_none() {
                self.error(
                    code::SYNTAX,
                    iterable.span,
                    "the grid-stride loop needs an index variable: for (I i, T v : buf.range(n))",
                );
                self.pop_scope();
                return;
            }
            let Some(br) = self.materialize(&b) else {
                self.pop_scope();
                return;
            };
            src = self.new_reg(b.ty.reg());
            self.emit(Op::Mov, src, br, 0);
            // Faults name the buffer by its variable (XPU §7.2).
            if let ExprKind::Name(id) = &t.kind {
                self.local_names.push(cajeta_bytecode::LocalName {
                    reg: src,
                    name: id.name.clone(),
                });
            }
            elem = Ty::Prim(s);
            let [n] = args.as_slice() else {
                self.error(
                    code::UNRESOLVED_METHOD,
                    iterable.span,
                    "range() takes one argument",
                );
                self.pop_scope();
                return;
            };
            let nv = self.expr(&n.value);
            if !nv.ty.is_int() {
                let m = self.ty_name(&nv.ty);
                self.error(
                    code::TYPE_MISMATCH,
                    n.value.span,
                    format!("range() needs an integer, found {m}"),
                );
                self.pop_scope();
                return;
            }
            // `i < n` in 64 bits (XPU §3.5), unsigned when both `i` and `n` are (LANGUAGE §4):
            // a uint64 `n` of 2^63 or more is no negative bound then (narrower unsigned ones
            // compare alike either way).
            unsigned_limit = nv.ty == Ty::Prim(Scalar::U64)
                && matches!(index_ty.as_ref().and_then(Ty::scalar), Some(t) if !t.is_signed());
            let Some(nr) = self.coerce(nv, &Ty::Prim(Scalar::I64), n.value.span) else {
                self.pop_scope();
                return;
            };
            self.emit(Op::Mov, limit, nr, 0);
            let u32t = Type::Scalar(Scalar::U32);
            let g = self.def(Op::Geom, u32t, super::xpu::geom::GLOBAL, 0);
            self.emit(Op::WrapI64, k, g, 0);
            let gx = self.def(Op::Geom, u32t, super::xpu::geom::GRID_DIM, 0);
            let bx = self.def(Op::Geom, u32t, super::xpu::geom::BLOCK_DIM, 0);
            let (gx64, bx64) = (self.temp(i64t), self.temp(i64t));
            self.emit(Op::WrapI64, gx64, gx, 0);
            self.emit(Op::WrapI64, bx64, bx, 0);
            let st = self.new_reg(i64t);
            self.emit(Op::MulI64, st, gx64, bx64);
            stride = Some(st);
        } else {
            self.begin_full_expr();
            let a = self.expr(iterable);
            // The owned values the iterable's expression made and stored nowhere (the `Bag`
            // of `heap Bag().items`) live as long as the iterable: to the loop's end.
            let waiting = self.full_exprs.pop().map(|(_, w)| w).unwrap_or_default();
            for v in &waiting {
                self.hold_to_scope_end(v, iterable.span);
            }
            let Ty::Array(e) = a.ty.clone() else {
                if a.ty != Ty::Error {
                    let n = self.ty_name(&a.ty);
                    self.error(
                        code::TYPE_MISMATCH,
                        iterable.span,
                        format!("for-each needs an array, found {n}"),
                    );
                }
                self.pop_scope();
                return;
            };
            let Some(ar) = self.materialize(&a) else {
                self.pop_scope();
                return;
            };
            // The iterable is evaluated once and lives until the loop ends (LANGUAGE §6.4).
            src = match self.hold_to_scope_end(
                &Val {
                    loc: Loc::Reg(ar),
                    ..a.clone()
                },
                iterable.span,
            ) {
                Some(held) => held,
                None => {
                    let r = self.new_reg(a.ty.reg());
                    self.emit(Op::Mov, r, ar, 0);
                    r
                }
            };
            elem = (*e).clone();
            // A null array fails here: at the iterable (LANGUAGE §10.3, the failing operation).
            self.set_pos(iterable.span);
            self.emit(Op::ArrLen, limit, src, 0);
            self.emit_bc(Op::LoadI, k, 0);
        }
        self.end_statement();
        let header = self.pc();
        let c = self.temp(Type::BOOL);
        if unsigned_limit {
            let u64t = Type::Scalar(Scalar::U64);
            let (ku, lu) = (self.temp(u64t), self.temp(u64t));
            self.emit(Op::WrapU64, ku, k, 0);
            self.emit(Op::WrapU64, lu, limit, 0);
            self.emit(Op::LtU64, c, ku, lu);
        } else {
            self.emit(Op::LtI64, c, k, limit);
        }
        let jexit = self.emit_bc(Op::JmpIfNot, c, 0);
        self.end_statement();
        let entry_da = self.da.clone();
        let depth = self.scopes.len();
        self.loops.push(LoopCtx {
            label,
            depth,
            body_depth: depth,
            breaks: vec![],
            continues: vec![],
            break_da: vec![],
            continue_da: vec![],
            is_switch: false,
        });
        self.push_scope();
        // The index and a copy of the element, taken at the start of each iteration.
        if let (Some((_, iname)), Some(ity)) = (index, &index_ty) {
            let r = self.new_reg(ity.reg());
            if let Some(li) = self.add_local(&iname.name, ity.clone(), r, index_final, iname.span) {
                let s = ity.scalar().expect("integer index");
                let conv = self.convert(k, Scalar::I64, s);
                self.move_into(r, conv);
                self.mark_assigned(li);
            }
        }
        let er = self.new_reg(elem_decl.reg());
        if let Some(li) = self.add_local(&name.name, elem_decl.clone(), er, elem_final, name.span) {
            self.set_pos(iterable.span);
            let got = match (&elem, range.is_some()) {
                (Ty::Prim(s), true) => self.def(
                    super::expr::typed_op("ld", *s).expect("ld"),
                    Type::Scalar(*s),
                    src,
                    k,
                ),
                (e, false) if e.elem_scalar().is_some() => {
                    let s = e.elem_scalar().expect("scalar");
                    self.def(
                        super::expr::typed_op("aget", s).expect("aget"),
                        Type::Scalar(s),
                        src,
                        k,
                    )
                }
                (e, _) => self.def(Op::ArrGetRef, e.reg(), src, k),
            };
            let v = Val::reg(elem.clone(), got);
            if elem_decl.is_owned_kind() {
                let f = self.new_reg(Type::BOOL);
                self.locals[li].flag = Some(f);
                self.emit_bc(Op::LoadI, f, 0);
            }
            self.store_local(li, v, name.span, true);
            self.mark_assigned(li);
        }
        self.end_statement();
        self.stmt(body);
        self.pop_scope();
        let cont = self.pc();
        let lp = self.loops.pop().expect("loop");
        for j in &lp.continues {
            self.patch(*j, cont);
        }
        match stride {
            Some(st) => {
                self.emit(Op::AddI64, k, k, st);
            }
            None => {
                self.emit(Op::AddImmI64, k, k, 1);
            }
        }
        self.emit_bc(Op::Jmp, 0, header);
        let merge = self.pc();
        self.patch(jexit, merge);
        for j in &lp.breaks {
            self.patch(*j, merge);
        }
        self.region(RegionKind::Loop, header, cont, merge);
        self.da = entry_da;
        self.reachable = true;
        self.pop_scope();
    }

    /// `while`, `do … while` and C-style `for` (with `update`).
    pub(super) fn while_stmt(
        &mut self,
        label: Option<String>,
        cond: Option<&Expr>,
        body: &Stmt,
        update: Option<&Vec<Expr>>,
        do_while: bool,
    ) {
        // `while (true)`, or any constant expression that is true (§5.3; the conventional
        // Java analysis of §7: such a loop completes only through a `break`).
        let always = cond.is_none_or(|c| self.constant_condition(c) == Some(true));
        let header = self.pc();
        let head_da = self.da.clone();
        let depth = self.scopes.len();
        let mut jexit = None;
        let entry_da;
        if do_while {
            entry_da = self.da.clone();
        } else {
            let mut exit_da = self.da.clone();
            if let (Some(c), false) = (cond, always) {
                let (r, t, f) = self.full_expr(|b| b.cond(c));
                jexit = Some(self.emit_bc(Op::JmpIfNot, r.unwrap_or(0), 0));
                self.end_statement();
                self.da = t;
                exit_da = f;
            }
            entry_da = exit_da;
        }
        self.loops.push(LoopCtx {
            label,
            depth,
            body_depth: depth,
            breaks: vec![],
            continues: vec![],
            break_da: vec![],
            continue_da: vec![],
            is_switch: false,
        });
        self.push_scope();
        self.stmt(body);
        self.pop_scope();
        let cont = self.pc();
        let lp = self.loops.pop().expect("loop");
        for j in &lp.continues {
            self.patch(*j, cont);
        }
        // The continue point is reachable if the body completes or any `continue` jumps there;
        // what is assigned there is what every way in assigned.
        for cd in lp.continue_da {
            self.merge_flow(cd, true);
        }
        if !lp.continues.is_empty() {
            self.reachable = true;
        }
        if let Some(update) = update {
            for e in update {
                self.set_pos(e.span);
                self.full_expr(|b| {
                    let v = b.expr(e);
                    b.drop_unstored(&v);
                });
                self.end_statement();
            }
        }
        if self.reachable {
            self.final_assigned_in_loop(&head_da);
        }
        // A do-while's condition is reached only by completing the body or a `continue`.
        let cond_reachable = self.reachable;
        if do_while {
            if let (Some(c), false) = (cond, always) {
                self.set_pos(c.span);
                let (r, _, f) = self.full_expr(|b| b.cond(c));
                self.emit_bc(Op::JmpIf, r.unwrap_or(0), header);
                self.da = f;
                self.end_statement();
                jexit = None;
            } else {
                self.emit_bc(Op::Jmp, 0, header);
            }
        } else {
            self.emit_bc(Op::Jmp, 0, header);
        }
        let merge = self.pc();
        if let Some(j) = jexit {
            self.patch(j, merge);
        }
        for j in &lp.breaks {
            self.patch(*j, merge);
        }
        self.region(RegionKind::Loop, header, cont, merge);
        // After the loop: reachable through the condition being false or a `break`, with what
        // every way out assigned.
        if always {
            let mut ways = lp.break_da.into_iter();
            match ways.next() {
                Some(first) => {
                    self.da = first;
                    self.reachable = true;
                    for bd in ways {
                        self.merge_flow(bd, true);
                    }
                }
                None => {
                    self.da = entry_da;
                    self.reachable = false;
                }
            }
        } else if do_while {
            // Out through the condition being false (if it is reached: the body ran, keeping
            // what it assigned) or a `break`.
            let at_cond = cond_reachable.then(|| self.da.clone());
            let mut ways = at_cond.into_iter().chain(lp.break_da);
            match ways.next() {
                Some(first) => {
                    self.da = first;
                    self.reachable = true;
                    for bd in ways {
                        self.merge_flow(bd, true);
                    }
                }
                None => self.reachable = false,
            }
        } else {
            self.da = entry_da;
            self.reachable = true;
            for bd in lp.break_da {
                self.merge_flow(bd, true);
            }
        }
    }

    /// At a loop's back edge: a `final` local definitely unassigned at the loop's head but
    /// assigned on the way round could be assigned again (`CAJETA_ERROR_FINAL_ASSIGNMENT` at
    /// its assignment, as Java's "might be assigned in loop").
    fn final_assigned_in_loop(&mut self, head_da: &[bool]) {
        let again: Vec<(String, Span)> = self
            .locals
            .iter()
            .filter_map(|l| {
                let u = l.unassigned?;
                let (at_head, round) = (*head_da.get(u)?, *self.da.get(u)?);
                (at_head && !round).then(|| (l.name.clone(), l.assigned_at.unwrap_or_default()))
            })
            .collect();
        for (name, at) in again {
            self.error(
                code::FINAL_ASSIGNMENT,
                at,
                format!("final variable '{name}' might be assigned in a loop"),
            );
        }
    }

    pub(super) fn jump_out(
        &mut self,
        label: Option<&crate::ast::Ident>,
        span: Span,
        is_break: bool,
    ) {
        // `break` leaves the innermost loop or switch, `continue` continues the innermost loop.
        let idx = match label {
            None if is_break => self.loops.len().checked_sub(1),
            None => self.loops.iter().rposition(|c| !c.is_switch),
            Some(l) => self
                .loops
                .iter()
                .rposition(|c| c.label.as_deref() == Some(&l.name)),
        };
        let Some(idx) = idx else {
            let what = if is_break { "break" } else { "continue" };
            match label {
                Some(l) => self.error(code::SYNTAX, l.span, format!("unknown label '{}'", l.name)),
                None => self.error(code::SYNTAX, span, format!("'{what}' outside of a loop")),
            }
            return;
        };
        let depth = if is_break {
            self.loops[idx].depth
        } else {
            self.loops[idx].body_depth
        };
        if self.reachable {
            self.check_pending_drops(depth, span);
        }
        self.drop_scopes_to(depth);
        let j = self.emit_bc(Op::Jmp, 0, 0);
        let da = self.da.clone();
        let reach = self.reachable;
        let lp = &mut self.loops[idx];
        if is_break {
            lp.breaks.push(j);
            if reach {
                lp.break_da.push(da);
            }
        } else {
            lp.continues.push(j);
            if reach {
                lp.continue_da.push(da);
            }
        }
        self.reachable = false;
    }

    fn return_stmt(&mut self, value: Option<&Expr>, transfer: bool, span: Span) {
        if !self.inline_frames.is_empty() {
            self.inline_return(value, span);
            return;
        }
        if matches!(self.job.kind, super::collect::JobKind::Clinit) {
            // LANGUAGE §7: `return` only in methods and constructors, not in `static {}`.
            self.error(
                code::SYNTAX,
                span,
                "a static initialiser block cannot return",
            );
            if let Some(v) = value {
                let _ = self.expr(v);
            }
            return;
        }
        let ret = self.ret.clone();
        if let (None, Some((depth, _))) = (value, &self.dtor_returns) {
            // `return;` in a destructor ends its statements; the fields still drop (§6.5).
            let depth = *depth;
            if self.reachable {
                self.check_pending_drops(depth, span);
            }
            self.drop_scopes_to(depth);
            let j = self.emit_bc(Op::Jmp, 0, 0);
            if let Some((_, returns)) = &mut self.dtor_returns {
                returns.push(j);
            }
            self.reachable = false;
            return;
        }
        match value {
            None => {
                if ret != Ty::Void {
                    self.error(code::TYPE_MISMATCH, span, "missing return value");
                    self.reachable = false;
                    return;
                }
                self.check_pending_drops(0, span);
                self.emit_return_drops();
                self.emit(Op::RetVoid, 0, 0, 0);
            }
            Some(e) => {
                if ret == Ty::Void {
                    self.error(
                        code::TYPE_MISMATCH,
                        e.span,
                        "a void method cannot return a value",
                    );
                    self.reachable = false;
                    return;
                }
                self.begin_full_expr();
                let v = self.expr_for(e, &ret);
                // `return v;` with `v` an owning local hands the title to the caller.
                let v = if !ret.is_owned_kind() {
                    v
                } else if transfer {
                    self.take_title(e, v)
                } else if matches!(e.kind, ExprKind::Name(_)) {
                    self.take_local_title(e, v)
                } else {
                    v
                };
                let own = v.own;
                let coerced = self.coerce(v, &ret, e.span);
                // What the value's statement left unstored drops once the value is computed,
                // before the locals (§6.4).
                self.end_full_expr();
                let Some(r) = coerced else {
                    self.reachable = false;
                    return;
                };
                self.set_pos(span);
                self.check_pending_drops(0, span);
                if ret.is_owned_kind() {
                    let flag = match own {
                        Own::No => self.load_bool(false),
                        Own::Yes => self.load_bool(true),
                        Own::Dyn(f) => f,
                    };
                    self.emit_return_drops();
                    self.emit(Op::RetOwn, r, flag, 0);
                } else {
                    self.emit_return_drops();
                    self.vector_result_lanes(&ret, r);
                    self.emit(Op::Ret, r, 0, 0);
                }
            }
        }
        self.reachable = false;
    }
}
