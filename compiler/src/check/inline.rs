//! Inlining at the call site, for two reasons.
//!
//! Tiny leaf functions: a static host method whose body is `return e;` with `e` built only
//! from its primitive parameters, literals, `Math` and operators that cannot raise a runtime
//! error, is expanded at the call site. Why: calls are the dominant cost of small helpers in
//! the interpreter (spectral's `A(i, j)` is called n² times per product). Why it is invisible:
//! such a body can raise no runtime error, so no trace could ever show its frame, and it has no
//! effects besides its value.
//!
//! `@Device` functions returning a `Vector<T,N>` (XPU §3.3, T2): a call returns one register,
//! and device code has no statics to carry lanes `1…N−1` (host functions use hidden statics,
//! see `vector.rs`), so every device call of such a function is lowered as its body, compiled
//! in the caller with fresh registers for its parameters and locals. The body runs inside a
//! one-trip loop (`while (true) { … }`): each `return e;` writes the result block and breaks
//! out of it (a multi-level exit when inside the body's own loops, which every executor
//! already lowers). Device code cannot recurse (XPU-N01), so inlining terminates; a cycle
//! is left as a plain call for `device_recursion` to report. The function is still compiled
//! on its own (its diagnostics come from there, once; it returns lane 0 to no caller).

use super::func::{FnBuilder, Own, Reg, Val};
use super::ty::Ty;
use super::MethodSig;
use crate::ast::{
    Arg, BinOp, Block, Expr, ExprKind, Ident, Member, PrimType, Stmt, StmtKind, TypeKind, UnOp,
};
use crate::diag::{code, Span};
use cajeta_bytecode::Type;

/// A `@Device` function body being inlined (innermost last in `FnBuilder::inline_frames`).
#[derive(Debug)]
pub struct InlineFrame {
    /// The function (to stop at cycles).
    pub func: u32,
    /// The result block (`N` registers of a vector).
    pub result: Reg,
    /// Label of the one-trip loop around the body (`None`: the body is one `return e;`).
    pub exit: Option<String>,
}

/// Saved caller state while a body is inlined.
struct Saved {
    ret: Ty,
    class: u32,
    unit: usize,
    scope_floor: usize,
    temps: Vec<Reg>,
    pos: (u32, u32),
    reachable: bool,
    diags: usize,
}

/// Largest expression (in nodes) that is inlined.
const MAX_NODES: usize = 40;

impl FnBuilder<'_> {
    /// The returned expression of `sig`'s body, if the call can be inlined.
    pub fn inlinable_body(&self, sig: &MethodSig) -> Option<Expr> {
        if self.device || sig.kind != cajeta_bytecode::FnKind::Host || !sig.is_static {
            return None;
        }
        if !matches!(sig.ret, Ty::Prim(_))
            || !sig.params.iter().all(|(_, t)| matches!(t, Ty::Prim(_)))
        {
            return None;
        }
        let (u, c, m) = sig.body?;
        let Member::Method(md) = &self.units[u].classes[c].members[m] else {
            return None;
        };
        let [stmt] = md.body.stmts.as_slice() else {
            return None;
        };
        let StmtKind::Return {
            value: Some(e),
            transfer: false,
        } = &stmt.kind
        else {
            return None;
        };
        let params: Vec<(&str, &Ty)> = sig.params.iter().map(|(n, t)| (n.as_str(), t)).collect();
        let mut nodes = 0;
        pure(e, &params, &mut nodes).then(|| e.clone())
    }

    /// Lowers an inlined call: the arguments (already evaluated, in order) bind fresh
    /// registers named like the parameters in a scope that sees nothing else.
    pub fn inline_call(
        &mut self,
        sig: &MethodSig,
        body: &Expr,
        vals: Vec<Val>,
        args: &[crate::ast::Arg],
        span: Span,
    ) -> Val {
        let binding = Self::bind_args(sig, args).unwrap_or_default();
        let mut regs = vec![];
        for (pi, (_, pty)) in sig.params.iter().enumerate() {
            let ai = binding.get(pi).copied().unwrap_or(pi);
            let Some(r) = self.coerce(
                vals[ai].clone(),
                pty,
                args.get(ai).map_or(span, |a| a.value.span),
            ) else {
                return Val::error();
            };
            regs.push(r);
        }
        // Names in the body resolve to the innermost scope first; `pure` proved it only
        // names parameters, so the caller's locals are never reached.
        self.push_scope();
        for ((name, ty), r) in sig.params.iter().zip(regs) {
            if let Some(li) = self.add_local(name, ty.clone(), r, true, span) {
                self.mark_assigned(li);
            }
        }
        // The body's diagnostics (and the conversion of its value to the result type) are
        // reported once, by the callee's own compilation, not again at every call.
        let diags = self.diags.len();
        let v = self.expr(body);
        let out = self.coerce(v, &sig.ret, span);
        self.diags.truncate(diags);
        // The scope holds no owned locals: closing it emits nothing.
        self.scopes.pop();
        match out {
            Some(r) => Val {
                ty: sig.ret.clone(),
                loc: super::func::Loc::Reg(r),
                untyped: false,
                own: Own::No,
            },
            None => Val::error(),
        }
    }
}

impl FnBuilder<'_> {
    /// A device call of `sig`, a `@Device` function returning a vector: its body inlined
    /// (module doc). `vals` are the evaluated arguments.
    pub fn inline_device_call(
        &mut self,
        sig: &MethodSig,
        vals: Vec<Val>,
        args: &[Arg],
        span: Span,
    ) -> Val {
        let ret = sig.ret.clone();
        let body = sig.body.and_then(|(u, c, m)| {
            let Member::Method(md) = &self.units[u].classes[c].members[m] else {
                return None;
            };
            let class = self
                .p
                .classes
                .iter()
                .position(|k| k.unit == u && k.index == c)?;
            Some((md.body.clone(), u, class as u32))
        });
        let cyclic =
            sig.func == self.job.func || self.inline_frames.iter().any(|f| f.func == sig.func);
        let Some((body, unit, class)) = body.filter(|_| !cyclic) else {
            // A cycle (or no body): a plain call without result, which `device_recursion`
            // reports as XPU-N01; the program never runs.
            let void = MethodSig {
                ret: Ty::Void,
                ..sig.clone()
            };
            let _ = self.emit_call(&void, None, vals, args, span);
            let b = self.vec_block(
                ret.scalar().unwrap_or(cajeta_bytecode::Scalar::I32),
                ret.lanes(),
            );
            return Val::reg(ret, b);
        };
        // Parameters: fresh registers (the body may assign them), bound in a scope that sees
        // none of the caller's locals.
        let binding = Self::bind_args(sig, args).unwrap_or_default();
        let mut bound: Vec<(Reg, Option<Vec<Reg>>)> = vec![];
        for (pi, (_, pty)) in sig.params.iter().enumerate() {
            let ai = binding.get(pi).copied().unwrap_or(pi);
            let arg_span = args.get(ai).map_or(span, |a| a.value.span);
            let v = vals[ai].clone();
            if let Ty::Class(_) = pty {
                let Some(fields) = self.pod_fields(args.get(ai).map(|a| &a.value), &v, pty) else {
                    return Val::error();
                };
                let copies: Vec<Reg> = fields
                    .iter()
                    .map(|&f| {
                        let t = self.regs[f as usize];
                        let r = self.new_reg(t);
                        self.emit(cajeta_bytecode::Op::Mov, r, f, 0);
                        r
                    })
                    .collect();
                bound.push((copies.first().copied().unwrap_or(0), Some(copies)));
                continue;
            }
            if let Ty::Shared(s) = pty {
                // The array and its length, as a call passes them (`FnBuilder::emit_call`).
                let Some(r) = self.coerce(v, pty, arg_span) else {
                    return Val::error();
                };
                let len = self.shared_arg_len(r);
                let (dst, dlen) = (self.new_reg(Type::Shared(*s)), self.new_reg(Type::I64));
                self.emit(cajeta_bytecode::Op::Mov, dst, r, 0);
                self.emit(cajeta_bytecode::Op::Mov, dlen, len, 0);
                self.checked_mems.push((dst, dlen));
                bound.push((dst, None));
                continue;
            }
            if let (Ty::Buffer(_), false) = (pty, v.ty == *pty || v.ty == Ty::Error) {
                let (a, b) = (self.ty_name(&v.ty), self.ty_name(pty));
                self.error(
                    code::TYPE_MISMATCH,
                    arg_span,
                    format!("expected {b}, found {a}"),
                );
                return Val::error();
            }
            let Some(r) = self.coerce(v, pty, arg_span) else {
                return Val::error();
            };
            let dst = match pty {
                Ty::Vector(s, n) => self.vec_block(*s, *n as usize),
                _ => self.new_reg(pty.reg()),
            };
            if let Ty::Vector(..) = pty {
                self.move_lanes(dst, r, pty);
            } else {
                self.emit(cajeta_bytecode::Op::Mov, dst, r, 0);
            }
            bound.push((dst, None));
        }
        let result = match ret {
            Ty::Vector(s, n) => self.vec_block(s, n as usize),
            _ => self.new_reg(ret.reg()),
        };
        // Traces show the callee's frame above the call (LANGUAGE §10.3, XPU §7.3).
        self.set_pos(span);
        let (line, col) = self.pos;
        let start = self.code.len() as u32;
        let saved = Saved {
            ret: std::mem::replace(&mut self.ret, ret.clone()),
            class: std::mem::replace(&mut self.class, class),
            unit: std::mem::replace(&mut self.unit, unit),
            scope_floor: self.scope_floor,
            temps: std::mem::take(&mut self.temps),
            pos: self.pos,
            reachable: self.reachable,
            diags: self.diags.len(),
        };
        self.push_scope();
        self.scope_floor = self.scopes.len() - 1;
        for ((name, ty), (r, pod)) in sig.params.iter().zip(bound) {
            if let Some(li) = self.add_local(name, ty.clone(), r, false, span) {
                self.mark_assigned(li);
                self.locals[li].pod = pod;
            }
        }
        let single = matches!(
            body.stmts.as_slice(),
            [Stmt {
                kind: StmtKind::Return { value: Some(_), .. },
                ..
            }]
        );
        let exit =
            (!single).then(|| format!("$inline{}.{}", self.inline_frames.len(), self.code.len()));
        self.inline_frames.push(InlineFrame {
            func: sig.func,
            result,
            exit: exit.clone(),
        });
        if single {
            self.block_stmts(&body.stmts);
        } else {
            let wrapped = Stmt {
                span: body.span,
                kind: StmtKind::Block(Block {
                    stmts: body.stmts.clone(),
                    span: body.span,
                }),
            };
            self.while_stmt(exit, None, &wrapped, None, false);
        }
        self.inline_frames.pop();
        self.end_statement();
        self.inlined.push(cajeta_bytecode::InlinedCall {
            start,
            end: self.code.len() as u32,
            callee: sig.func,
            line,
            col,
        });
        // Device code has no owned locals: closing the scope emits nothing.
        self.scopes.pop();
        self.ret = saved.ret;
        self.class = saved.class;
        self.unit = saved.unit;
        self.scope_floor = saved.scope_floor;
        self.temps = saved.temps;
        self.pos = saved.pos;
        self.reachable = saved.reachable;
        // The body's diagnostics are reported by its own compilation.
        self.diags.truncate(saved.diags);
        self.last_def = None;
        Val::reg(ret, result)
    }

    /// `return e;` in an inlined body: `e` into the result block, then out of the body.
    pub fn inline_return(&mut self, value: Option<&Expr>, span: Span) {
        let ret = self.ret.clone();
        let Some(e) = value else {
            // Reported by the function's own compilation.
            self.reachable = false;
            return;
        };
        let v = self.expr_for(e, &ret);
        let Some(r) = self.coerce(v, &ret, e.span) else {
            self.reachable = false;
            return;
        };
        let Some(frame) = self.inline_frames.last() else {
            return;
        };
        let (result, exit) = (frame.result, frame.exit.clone());
        self.move_lanes(result, r, &ret);
        self.end_statement();
        match exit {
            Some(name) => self.jump_out(Some(&Ident { name, span }), span, true),
            None => self.reachable = false,
        }
    }
}

/// True if `e` is certainly of a float type: then `/` and `%` on it never trap.
fn is_float(e: &Expr, params: &[(&str, &Ty)]) -> bool {
    match &e.kind {
        ExprKind::Float { .. } => true,
        ExprKind::Paren(i) => is_float(i, params),
        ExprKind::Cast { ty, .. } => {
            matches!(ty.kind, TypeKind::Prim(PrimType::F32 | PrimType::F64))
        }
        ExprKind::Name(id) => params
            .iter()
            .any(|(n, t)| *n == id.name && matches!(t, Ty::Prim(s) if s.is_float())),
        ExprKind::Unary { operand, .. } => is_float(operand, params),
        ExprKind::Binary {
            op: BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem,
            lhs,
            rhs,
        } => is_float(lhs, params) || is_float(rhs, params),
        _ => false,
    }
}

/// True if `e` only reads `params`, literals and `Math` and cannot raise a runtime error.
fn pure(e: &Expr, params: &[(&str, &Ty)], nodes: &mut usize) -> bool {
    *nodes += 1;
    if *nodes > MAX_NODES {
        return false;
    }
    match &e.kind {
        ExprKind::Int { .. } | ExprKind::Float { .. } | ExprKind::Bool(_) | ExprKind::Char(_) => {
            true
        }
        ExprKind::Name(id) => params.iter().any(|(n, _)| *n == id.name),
        ExprKind::Paren(i) | ExprKind::Cast { expr: i, .. } => pure(i, params, nodes),
        ExprKind::Unary { op, operand } => {
            !matches!(op, UnOp::PreInc | UnOp::PreDec) && pure(operand, params, nodes)
        }
        ExprKind::Binary { op, lhs, rhs } => {
            // Integer division traps on 0 and MIN / -1: only a literal divisor above 1 is safe;
            // float division never traps.
            let divisor_ok = match op {
                BinOp::Div | BinOp::Rem => {
                    matches!(rhs.kind, ExprKind::Int { value, .. } if value > 1)
                        || is_float(lhs, params)
                        || is_float(rhs, params)
                }
                _ => true,
            };
            divisor_ok && pure(lhs, params, nodes) && pure(rhs, params, nodes)
        }
        ExprKind::Call {
            target: Some(t),
            name,
            args,
            ..
        } => {
            matches!(&t.kind, ExprKind::Name(id) if id.name == "Math" && !params.iter().any(|(n, _)| *n == "Math"))
                && !matches!(name.name.as_str(), "parseInt")
                && args
                    .iter()
                    .all(|a| a.name.is_none() && pure(&a.value, params, nodes))
        }
        _ => false,
    }
}
