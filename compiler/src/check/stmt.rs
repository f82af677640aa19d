//! Lowering of statements: blocks, declarations, `if`, loops, `break`/`continue`, `return`,
//! with definite assignment (LANGUAGE §7) and drops at every scope exit (§6.4).

use super::func::{FnBuilder, LoopCtx, Own, Val};
use super::ty::Ty;
use crate::ast::{Expr, ExprKind, ForInit, LocalDecl, Stmt, StmtKind};
use crate::diag::{code, Span};
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
                let v = self.expr(e);
                self.drop_unstored(&v);
            }
            StmtKind::Block(b) => {
                self.push_scope();
                self.block_stmts(&b.stmts);
                self.pop_scope();
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
                            let v = self.expr(e);
                            self.drop_unstored(&v);
                        }
                    }
                    None => {}
                }
                self.end_statement();
                self.while_stmt(label, cond.as_ref(), body, Some(update), false);
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
            StmtKind::ForEach { .. } => self.error(
                code::NOT_IMPLEMENTED,
                s.span,
                "for-each loops are not implemented yet (T2)",
            ),
            StmtKind::Switch { .. } => self.error(
                code::NOT_IMPLEMENTED,
                s.span,
                "switch is not implemented yet (T2)",
            ),
        }
        self.end_statement();
    }

    /// Drops an owned value that is stored nowhere (LANGUAGE §6.4).
    pub fn drop_unstored(&mut self, v: &Val) {
        if !v.ty.is_owned_kind() {
            return;
        }
        let Some(r) = self.to_reg_if_reg(v) else {
            return;
        };
        match v.own {
            Own::No => {}
            Own::Yes => {
                let t = self.load_bool(true);
                self.emit(Op::Drop, r, t, 0);
            }
            Own::Dyn(f) => {
                self.emit(Op::Drop, r, f, 0);
            }
        }
    }

    fn to_reg_if_reg(&self, v: &Val) -> Option<u16> {
        match v.loc {
            super::func::Loc::Reg(r) => Some(r),
            _ => None,
        }
    }

    fn local_decl(&mut self, d: &LocalDecl) {
        let ty = match self.p.resolve_type(self.unit, &d.ty) {
            Ok(t) => t,
            Err(diag) => {
                self.diags.push(diag);
                Ty::Error
            }
        };
        for var in &d.vars {
            self.set_pos(var.name.span);
            let reg = self.new_reg(ty.reg());
            let Some(li) =
                self.add_local(&var.name.name, ty.clone(), reg, d.is_final, var.name.span)
            else {
                continue;
            };
            if ty.is_owned_kind() {
                let f = self.new_reg(Type::BOOL);
                self.locals[li].flag = Some(f);
                self.emit_bc(Op::LoadI, f, 0);
            }
            if let Some(init) = &var.init {
                let v = self.expr_for(init, &ty);
                let v = if var.transfer {
                    self.transfer_name(init, v)
                } else {
                    v
                };
                self.store_local(li, v, init.span, true);
                // Even a failed initialiser counts as an assignment: no cascading errors.
                let da = self.locals[li].da;
                self.da[da] = true;
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
        let (c, when_true, when_false) = self.cond(cond);
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
            let r = self.reachable;
            self.reachable = true;
            let _ = r;
            self.merge_flow(then_da, then_reach);
        }
        let merge = self.pc();
        self.region(RegionKind::If, header as u32, 0, merge);
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

    /// `while`, `do … while` and C-style `for` (with `update`).
    fn while_stmt(
        &mut self,
        label: Option<String>,
        cond: Option<&Expr>,
        body: &Stmt,
        update: Option<&Vec<Expr>>,
        do_while: bool,
    ) {
        let always = cond.is_none_or(|c| matches!(c.kind, ExprKind::Bool(true)));
        let header = self.pc();
        let depth = self.scopes.len();
        let mut jexit = None;
        let entry_da;
        if do_while {
            entry_da = self.da.clone();
        } else {
            let mut exit_da = self.da.clone();
            if let (Some(c), false) = (cond, always) {
                let (r, t, f) = self.cond(c);
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
        });
        self.push_scope();
        self.stmt(body);
        self.pop_scope();
        let cont = self.pc();
        let lp = self.loops.pop().expect("loop");
        for j in &lp.continues {
            self.patch(*j, cont);
        }
        // The continue point is reachable if the body completes or any `continue` jumps there.
        if !lp.continues.is_empty() {
            self.reachable = true;
        }
        if let Some(update) = update {
            for e in update {
                let v = self.expr(e);
                self.drop_unstored(&v);
                self.end_statement();
            }
        }
        if do_while {
            if let (Some(c), false) = (cond, always) {
                let (r, _, f) = self.cond(c);
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
        // After the loop: reachable through the condition being false or a `break`.
        if always && !do_while || (always && do_while) {
            self.reachable = !lp.breaks.is_empty();
            self.da = entry_da;
            for bd in lp.break_da {
                for (a, b) in self.da.iter_mut().zip(bd) {
                    *a = *a && b;
                }
            }
        } else if do_while {
            // The body ran once: keep what it assigned.
            let body_da = self.da.clone();
            self.da = body_da;
            self.reachable = true;
            for bd in lp.break_da {
                for (a, b) in self.da.iter_mut().zip(bd) {
                    *a = *a && b;
                }
            }
        } else {
            self.da = entry_da;
            self.reachable = true;
        }
    }

    fn jump_out(&mut self, label: Option<&crate::ast::Ident>, span: Span, is_break: bool) {
        let idx = match label {
            None => self.loops.len().checked_sub(1),
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
        }
        self.reachable = false;
    }

    fn return_stmt(&mut self, value: Option<&Expr>, transfer: bool, span: Span) {
        let ret = self.ret.clone();
        match value {
            None => {
                if ret != Ty::Void {
                    self.error(code::TYPE_MISMATCH, span, "missing return value");
                    self.reachable = false;
                    return;
                }
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
                let v = self.expr_for(e, &ret);
                // `return v;` with `v` an owning local hands the title to the caller.
                let v = if ret.is_owned_kind() && (transfer || matches!(e.kind, ExprKind::Name(_)))
                {
                    self.take_title(e, v)
                } else {
                    v
                };
                let own = v.own;
                let Some(r) = self.coerce(v, &ret, e.span) else {
                    self.reachable = false;
                    return;
                };
                self.set_pos(span);
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
                    self.emit(Op::Ret, r, 0, 0);
                }
            }
        }
        self.reachable = false;
    }
}
