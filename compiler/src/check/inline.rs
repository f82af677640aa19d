//! Inlining of tiny leaf functions: a static host method whose body is `return e;` with `e`
//! built only from its primitive parameters, literals, `Math` and operators that cannot raise
//! a runtime error, is expanded at the call site.
//!
//! Why: calls are the dominant cost of small helpers in the interpreter (spectral's `A(i, j)`
//! is called n² times per product). Why it is invisible: such a body can raise no runtime
//! error, so no trace could ever show its frame, and it has no effects besides its value.

use super::func::{FnBuilder, Own, Val};
use super::ty::Ty;
use super::MethodSig;
use crate::ast::{BinOp, Expr, ExprKind, Member, PrimType, StmtKind, TypeKind, UnOp};
use crate::diag::Span;

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
                let da = self.locals[li].da;
                self.da[da] = true;
            }
        }
        let v = self.expr(body);
        let out = self.coerce(v, &sig.ret, span);
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
