//! Expressions (LANGUAGE §8, XPU §3.4) and types (LANGUAGE §9).
//!
//! Precedence climbing over the table of §8.1; `<<`, `>>`, `>>>` are assembled from adjacent
//! `<`/`>` tokens. The call chain per nesting level is `assign → ternary → binary → unary →
//! primary/postfix`; `unary` counts one depth level, each link of a binary or postfix chain a
//! sixteenth of one (`Parser::link`).

use super::{is_assignable, Failed, PResult, Parser, GENERIC_TYPES};
use crate::ast::{
    Arg, BinOp, Expr, ExprKind, Ident, Placement, PostOp, SwitchArm, TypeArg, TypeExpr, TypeKind,
    UnOp,
};
use crate::lexer::{Kw, Tok, P};

/// Precedence of `+`/`-`: type-argument constants are parsed at this level and above, so that
/// `>` and `,` end them.
const PREC_ADD: u8 = 10;

impl Parser {
    /// A full expression (assignment level).
    pub(super) fn expr(&mut self) -> PResult<Expr> {
        let lhs = self.ternary()?;
        let Some((op, transfer)) = assign_op(self.tok()) else {
            return Ok(lhs);
        };
        self.bump();
        if !is_assignable(&lhs) {
            self.error(
                lhs.span,
                "cannot assign to this expression: expected a variable, field or element",
            );
        }
        self.deeper()?;
        let value = self.expr();
        self.shallower();
        let value = value?;
        let span = lhs.span.to(value.span);
        Ok(Expr {
            kind: ExprKind::Assign {
                op,
                transfer,
                target: Box::new(lhs),
                value: Box::new(value),
            },
            span,
        })
    }

    /// `c ? a : b` and everything above it.
    pub(super) fn ternary(&mut self) -> PResult<Expr> {
        let cond = self.binary(0)?;
        if !self.eat_p(P::Question) {
            return Ok(cond);
        }
        self.deeper()?;
        let r = self.ternary_rest(cond);
        self.shallower();
        r
    }

    fn ternary_rest(&mut self, cond: Expr) -> PResult<Expr> {
        let then = self.expr()?;
        self.expect_p(P::Colon)?;
        let els = self.ternary()?;
        let span = cond.span.to(els.span);
        Ok(Expr {
            kind: ExprKind::Cond {
                cond: Box::new(cond),
                then: Box::new(then),
                els: Box::new(els),
            },
            span,
        })
    }

    /// A `case` constant: a conditional expression (no assignment or lambda). A `?:` takes
    /// its own `:` first, so `case c ? 1 : 2:` is unambiguous, as in Java.
    pub(super) fn case_constant(&mut self) -> PResult<Expr> {
        let outer = std::mem::replace(&mut self.case_label, true);
        let r = self.ternary();
        self.case_label = outer;
        r
    }

    /// Binary operators of precedence `min_prec` and higher (left-associative).
    fn binary(&mut self, min_prec: u8) -> PResult<Expr> {
        let saved = self.depth;
        let r = self.binary_chain(min_prec);
        self.depth = saved;
        r
    }

    fn binary_chain(&mut self, min_prec: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        loop {
            if self.is_kw(Kw::Instanceof) {
                // At the construct's first character (LANGUAGE §10.1): its left operand.
                let span = lhs.span.to(self.span());
                self.not_implemented(span, "'instanceof' is");
                return Err(Failed);
            }
            let Some((op, prec, len)) = self.binop() else {
                break;
            };
            if prec < min_prec {
                break;
            }
            for _ in 0..len {
                self.bump();
            }
            // Each link deepens the tree by one node.
            self.link()?;
            let rhs = self.binary(prec + 1)?;
            let span = lhs.span.to(rhs.span);
            lhs = Expr {
                kind: ExprKind::Binary {
                    op,
                    lhs: Box::new(lhs),
                    rhs: Box::new(rhs),
                },
                span,
            };
        }
        Ok(lhs)
    }

    /// The binary operator at the current token: operator, precedence and token count.
    fn binop(&self) -> Option<(BinOp, u8, usize)> {
        let adjacent = |n: usize, p: P| self.nth_is_p(n, p) && !self.nth(n).spaced;
        let Tok::P(p) = self.tok() else { return None };
        Some(match p {
            P::OrOr => (BinOp::Or, 1, 1),
            P::AndAnd => (BinOp::And, 2, 1),
            P::Pipe => (BinOp::BitOr, 3, 1),
            P::Caret => (BinOp::BitXor, 4, 1),
            P::Amp => (BinOp::BitAnd, 5, 1),
            P::EqEq => (BinOp::Eq, 6, 1),
            P::Ne => (BinOp::Ne, 6, 1),
            P::Lt if adjacent(1, P::Lt) => (BinOp::Shl, 9, 2),
            P::Gt if adjacent(1, P::Gt) && adjacent(2, P::Gt) => (BinOp::Ushr, 9, 3),
            P::Gt if adjacent(1, P::Gt) => (BinOp::Shr, 9, 2),
            P::Lt => (BinOp::Lt, 8, 1),
            P::Le => (BinOp::Le, 8, 1),
            P::Gt => (BinOp::Gt, 8, 1),
            P::Ge => (BinOp::Ge, 8, 1),
            P::Plus => (BinOp::Add, PREC_ADD, 1),
            P::Minus => (BinOp::Sub, PREC_ADD, 1),
            P::Star => (BinOp::Mul, 11, 1),
            P::Slash => (BinOp::Div, 11, 1),
            P::Percent => (BinOp::Rem, 11, 1),
            _ => return None,
        })
    }

    /// Prefix operators, casts and `#`, then a postfix expression (depth-counted).
    fn unary(&mut self) -> PResult<Expr> {
        self.deeper()?;
        let r = self.unary_inner();
        self.shallower();
        r
    }

    /// Dispatches through a function pointer to keep this recursive frame small.
    fn unary_inner(&mut self) -> PResult<Expr> {
        type Form = fn(&mut Parser) -> PResult<Expr>;
        let form: Form = match self.tok() {
            Tok::P(P::Plus | P::Minus | P::Bang | P::Tilde | P::PlusPlus | P::MinusMinus) => {
                Parser::prefix_op
            }
            Tok::P(P::Hash) => Parser::transfer,
            Tok::P(P::LParen) if self.at_cast() => Parser::cast,
            Tok::P(P::LParen) if self.at_class_cast() => Parser::class_cast,
            _ => |p| {
                let e = p.primary()?;
                p.postfix(e)
            },
        };
        form(self)
    }

    fn prefix_op(&mut self) -> PResult<Expr> {
        let t = self.bump();
        if t.tok == Tok::P(P::Minus) && is_min_long(self.tok()) {
            // `-9223372036854775808L`: the only place its magnitude is allowed (§1).
            let lit = self.bump();
            let operand = Expr {
                kind: ExprKind::Int {
                    value: 1 << 63,
                    non_decimal: false,
                    long: true,
                },
                span: lit.span,
            };
            return Ok(Expr {
                kind: ExprKind::Unary {
                    op: UnOp::Neg,
                    operand: Box::new(operand),
                },
                span: self.since(t.span),
            });
        }
        let op = match t.tok {
            Tok::P(P::Plus) => UnOp::Plus,
            Tok::P(P::Minus) => UnOp::Neg,
            Tok::P(P::Bang) => UnOp::Not,
            Tok::P(P::Tilde) => UnOp::BitNot,
            Tok::P(P::PlusPlus) => UnOp::PreInc,
            _ => UnOp::PreDec,
        };
        let operand = self.unary()?;
        if matches!(op, UnOp::PreInc | UnOp::PreDec) && !is_assignable(&operand) {
            self.error(
                operand.span,
                "'++' and '--' need a variable, field or element",
            );
        }
        Ok(Expr {
            kind: ExprKind::Unary {
                op,
                operand: Box::new(operand),
            },
            span: self.since(t.span),
        })
    }

    /// `#e` (LANGUAGE §6.3).
    fn transfer(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        let operand = self.unary()?;
        if !matches!(operand.kind, ExprKind::Name(_) | ExprKind::Field { .. }) {
            self.error(
                start,
                "the operand of '#' must be a local, parameter or field name",
            );
        }
        Ok(Expr {
            kind: ExprKind::Transfer(Box::new(operand)),
            span: self.since(start),
        })
    }

    /// `(T) e` with `T` primitive (checked by [`Parser::at_cast`]).
    fn cast(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        let ty = self.parse_type()?;
        self.expect_p(P::RParen)?;
        let operand = self.unary()?;
        Ok(Expr {
            kind: ExprKind::Cast {
                ty,
                expr: Box::new(operand),
            },
            span: self.since(start),
        })
    }

    /// At `(`: whether a cast follows: a primitive type name, optional `[]` pairs, then `)`.
    fn at_cast(&self) -> bool {
        let prim = match &self.nth(1).tok {
            Tok::Kw(k) => k.prim().is_some(),
            Tok::Ident(n) => n == "bfloat16",
            _ => false,
        };
        if !prim {
            return false;
        }
        let mut i = 2;
        while self.nth_is_p(i, P::LBracket) && self.nth_is_p(i + 1, P::RBracket) {
            i += 2;
        }
        self.nth_is_p(i, P::RParen)
    }

    /// At `(`: whether a class cast follows (T3, LANGUAGE §3.1): a qualified name, optional
    /// `[]` pairs and `)`, then a token that starts an operand but cannot continue an
    /// expression (`(C) c`, `(pkg.C) make()`), so that `(a) + b` stays a parenthesis.
    fn at_class_cast(&self) -> bool {
        let mut i = 1;
        loop {
            if !matches!(self.nth(i).tok, Tok::Ident(_)) {
                return false;
            }
            i += 1;
            if !self.nth_is_p(i, P::Dot) {
                break;
            }
            i += 1;
        }
        while self.nth_is_p(i, P::LBracket) && self.nth_is_p(i + 1, P::RBracket) {
            i += 2;
        }
        if !self.nth_is_p(i, P::RParen) {
            return false;
        }
        matches!(
            self.nth(i + 1).tok,
            Tok::Ident(_)
                | Tok::Int { .. }
                | Tok::Float { .. }
                | Tok::Str(_)
                | Tok::Char(_)
                | Tok::Kw(Kw::This | Kw::True | Kw::False | Kw::Null | Kw::Heap | Kw::Stack)
                | Tok::P(P::LParen | P::Bang | P::Tilde)
        )
    }

    /// `(C) e`: a class cast, reported as not implemented (T3).
    fn class_cast(&mut self) -> PResult<Expr> {
        let span = self.span();
        self.not_implemented(span, "class casts are");
        Err(Failed)
    }

    /// Postfix `.f`, `.m(args)`, `.vload<N>(args)`, `[i]`, `(args)`, `++`, `--`.
    fn postfix(&mut self, e: Expr) -> PResult<Expr> {
        let saved = self.depth;
        let r = self.postfix_chain(e);
        self.depth = saved;
        r
    }

    fn postfix_chain(&mut self, mut e: Expr) -> PResult<Expr> {
        loop {
            let start = e.span;
            let kind = match self.tok() {
                Tok::P(P::Dot) => {
                    self.link()?;
                    self.bump();
                    match self.tok().clone() {
                        Tok::Ident(n) => {
                            let name = self.ident("a member name")?;
                            let type_args = if n == "vload" && self.is_p(P::Lt) {
                                self.method_type_args()
                            } else {
                                None
                            };
                            if let Some(type_args) = type_args {
                                let args = self.args()?;
                                ExprKind::Call {
                                    target: Some(Box::new(e)),
                                    name,
                                    type_args,
                                    args,
                                }
                            } else if self.is_p(P::LParen) {
                                let args = self.args()?;
                                ExprKind::Call {
                                    target: Some(Box::new(e)),
                                    name,
                                    type_args: Vec::new(),
                                    args,
                                }
                            } else {
                                ExprKind::Field {
                                    target: Box::new(e),
                                    name,
                                }
                            }
                        }
                        Tok::Kw(k @ (Kw::Class | Kw::This | Kw::Super)) => {
                            let span = self.span();
                            self.not_implemented(span, &format!("'.{}' is", k.as_str()));
                            return Err(Failed);
                        }
                        Tok::P(P::Lt) => {
                            self.error_here(
                                "type arguments follow the method name: write 'e.m<A>(args)'",
                            );
                            return Err(Failed);
                        }
                        _ => {
                            self.ident("a member name")?;
                            return Err(Failed);
                        }
                    }
                }
                Tok::P(P::LBracket) => {
                    self.link()?;
                    self.bump();
                    let index = self.expr()?;
                    self.expect_p(P::RBracket)?;
                    ExprKind::Index {
                        target: Box::new(e),
                        index: Box::new(index),
                    }
                }
                Tok::P(P::LParen) => {
                    self.link()?;
                    let args = self.args()?;
                    ExprKind::Invoke {
                        callee: Box::new(e),
                        args,
                    }
                }
                Tok::P(p @ (P::PlusPlus | P::MinusMinus)) => {
                    let op = if *p == P::PlusPlus {
                        PostOp::Inc
                    } else {
                        PostOp::Dec
                    };
                    self.link()?;
                    self.bump();
                    if !is_assignable(&e) {
                        self.error(e.span, "'++' and '--' need a variable, field or element");
                    }
                    ExprKind::Postfix {
                        op,
                        operand: Box::new(e),
                    }
                }
                Tok::P(P::ColonColon) => {
                    let span = e.span.to(self.span());
                    self.not_implemented(span, "method references are");
                    return Err(Failed);
                }
                _ => return Ok(e),
            };
            e = Expr {
                kind,
                span: self.since(start),
            };
        }
    }

    /// `<A>` before `(` after `vload`, tried speculatively: `None` (and nothing consumed) if
    /// they do not parse, and `<` is then less-than.
    fn method_type_args(&mut self) -> Option<Vec<TypeArg>> {
        let saved = self.save();
        match self.type_args() {
            Ok(args) if self.is_p(P::LParen) => Some(args),
            _ => {
                self.restore(saved);
                None
            }
        }
    }

    /// `'(' (arg (',' arg)*)? ')'` with `name: value` named arguments.
    fn args(&mut self) -> PResult<Vec<Arg>> {
        self.expect_p(P::LParen)?;
        let mut args = Vec::new();
        if self.eat_p(P::RParen) {
            return Ok(args);
        }
        loop {
            let mut name = None;
            if self.is_ident() && self.nth_is_p(1, P::Colon) {
                name = Some(self.ident("an argument name")?);
                self.bump();
            }
            let value = self.expr()?;
            args.push(Arg { name, value });
            if !self.eat_p(P::Comma) {
                break;
            }
        }
        self.expect_p(P::RParen)?;
        Ok(args)
    }

    /// Level 1 of §8.1; dispatches through a function pointer to keep the frame small.
    fn primary(&mut self) -> PResult<Expr> {
        type Form = fn(&mut Parser) -> PResult<Expr>;
        let form: Form = match self.tok() {
            Tok::Int { .. }
            | Tok::Float { .. }
            | Tok::Char(_)
            | Tok::Str(_)
            | Tok::Kw(Kw::True | Kw::False | Kw::Null) => Parser::literal,
            Tok::Kw(Kw::This) => Parser::this_expr,
            Tok::Kw(Kw::Heap | Kw::Stack) => Parser::creation,
            Tok::Kw(Kw::Switch) => Parser::switch_expr,
            Tok::Kw(k @ (Kw::Super | Kw::Await | Kw::Spawn | Kw::Detach | Kw::Async)) => {
                let what = format!("'{}' is", k.as_str());
                let span = self.span();
                self.not_implemented(span, &what);
                return Err(Failed);
            }
            Tok::Ident(_) => Parser::name_expr,
            Tok::P(P::LParen) => Parser::paren,
            Tok::P(P::LBracket) => Parser::array_literal,
            _ => {
                // `m<float64>(x)`: `<` was less-than (LANGUAGE §9), but say what was meant.
                let after_lt = self.pos > 0 && self.toks[self.pos - 1].tok == Tok::P(P::Lt);
                let type_list = self.nth_is_p(1, P::Gt) || self.nth_is_p(1, P::Comma);
                let hint = if after_lt && self.at_type_start(0) && type_list {
                    " (type arguments follow only library generic names and 'vload'; \
                     user-declared generic methods are not implemented)"
                } else {
                    ""
                };
                self.error_here(format!(
                    "expected an expression, found {}{hint}",
                    self.describe()
                ));
                return Err(Failed);
            }
        };
        form(self)
    }

    fn literal(&mut self) -> PResult<Expr> {
        if is_min_long(self.tok()) {
            self.error_here("integer literal is too large for int64");
        }
        let t = self.bump();
        let kind = match t.tok {
            Tok::Int {
                value,
                non_decimal,
                long,
            } => ExprKind::Int {
                value,
                non_decimal,
                long,
            },
            Tok::Float {
                value,
                f32_suffix,
                f64_suffix,
                text,
            } => ExprKind::Float {
                value,
                f32_suffix,
                f64_suffix,
                text,
            },
            Tok::Char(c) => ExprKind::Char(c),
            Tok::Str(s) => ExprKind::Str(s),
            Tok::Kw(Kw::True) => ExprKind::Bool(true),
            Tok::Kw(Kw::False) => ExprKind::Bool(false),
            _ => ExprKind::Null,
        };
        Ok(Expr { kind, span: t.span })
    }

    /// `this`, or `this(args)` (constructor chaining, kept as a bare call named `this`).
    fn this_expr(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        let kind = if self.is_p(P::LParen) {
            let args = self.args()?;
            let name = Ident {
                name: "this".into(),
                span: start,
            };
            ExprKind::Call {
                target: None,
                name,
                type_args: Vec::new(),
                args,
            }
        } else {
            ExprKind::This
        };
        Ok(Expr {
            kind,
            span: self.since(start),
        })
    }

    /// A name, a bare call `m(args)`, a library generic name `KernelBuffer<T>`, `shared T[n]`.
    fn name_expr(&mut self) -> PResult<Expr> {
        let start = self.span();
        let Tok::Ident(name) = self.tok().clone() else {
            return Err(Failed);
        };
        if self.java_new() {
            return Err(Failed);
        }
        if name == "shared" && self.at_type_start(1) {
            return self.shared_array();
        }
        if self.nth_is_p(1, P::Arrow) && !self.case_label {
            self.not_implemented(start, "lambda expressions are");
            return Err(Failed);
        }
        self.bump();
        let id = Ident { name, span: start };
        let kind = if self.is_p(P::LParen) {
            let args = self.args()?;
            ExprKind::Call {
                target: None,
                name: id,
                type_args: Vec::new(),
                args,
            }
        } else if self.is_p(P::Lt) && GENERIC_TYPES.contains(&id.name.as_str()) {
            // Type arguments, unless they do not parse (then `<` is less-than).
            let saved = self.save();
            match self.type_args() {
                Ok(args) => ExprKind::GenericName { name: id, args },
                Err(Failed) => {
                    self.restore(saved);
                    ExprKind::Name(id)
                }
            }
        } else {
            ExprKind::Name(id)
        };
        Ok(Expr {
            kind,
            span: self.since(start),
        })
    }

    /// `( e )` (a lambda parameter list is T3).
    fn paren(&mut self) -> PResult<Expr> {
        let start = self.span();
        if self.at_lambda_params() && !self.case_label {
            self.not_implemented(start, "lambda expressions are");
            return Err(Failed);
        }
        self.bump();
        let e = self.expr()?;
        self.expect_p(P::RParen)?;
        Ok(Expr {
            kind: ExprKind::Paren(Box::new(e)),
            span: self.since(start),
        })
    }

    /// `[a, b, c]` (T2).
    fn array_literal(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        let mut items = Vec::new();
        if !self.is_p(P::RBracket) {
            loop {
                items.push(self.expr()?);
                if !self.eat_p(P::Comma) {
                    break;
                }
            }
        }
        self.expect_p(P::RBracket)?;
        Ok(Expr {
            kind: ExprKind::ArrayLit(items),
            span: self.since(start),
        })
    }

    /// Whether the token `n` ahead starts a type (a primitive keyword or a name).
    /// At Java's `new T…`: reports that Cajeta allocates with `heap` or `stack` instead.
    pub(super) fn java_new(&mut self) -> bool {
        let at = self.is_ident_named("new") && self.at_type_start(1);
        if at {
            self.error_here(
                "there is no 'new' in Cajeta: create objects and arrays with 'heap' or 'stack' \
                 ('heap T(…)', 'heap T[n]')",
            );
        }
        at
    }

    fn at_type_start(&self, n: usize) -> bool {
        match &self.nth(n).tok {
            Tok::Kw(k) => k.prim().is_some(),
            Tok::Ident(_) => true,
            _ => false,
        }
    }

    /// At `(`: whether a lambda parameter list `( … ) ->` follows. Only names, types, commas
    /// and brackets may appear inside, so the scan stops early on ordinary parentheses.
    fn at_lambda_params(&self) -> bool {
        let mut i = 1;
        loop {
            match &self.nth(i).tok {
                Tok::P(P::RParen) => return self.nth_is_p(i + 1, P::Arrow),
                Tok::Ident(_) | Tok::Kw(_) => {}
                Tok::P(P::Comma | P::LBracket | P::RBracket | P::Lt | P::Gt | P::Dot) => {}
                _ => return false,
            }
            i += 1;
        }
    }

    /// `heap`/`stack` creation (LANGUAGE §6.1).
    fn creation(&mut self) -> PResult<Expr> {
        let start = self.span();
        let placement = if self.bump().tok == Tok::Kw(Kw::Heap) {
            Placement::Heap
        } else {
            Placement::Stack
        };
        let base = self.type_base()?;
        let kind = if self.is_p(P::LParen) {
            let args = self.args()?;
            ExprKind::New {
                placement,
                ty: base,
                args,
            }
        } else if self.is_p(P::LBracket) && self.nth_is_p(1, P::RBracket) {
            // `heap T[] { a, b }` (extra `[]` pairs make the element an array type).
            self.bump();
            self.bump();
            let mut elem = base;
            while self.is_p(P::LBracket) && self.nth_is_p(1, P::RBracket) {
                self.bump();
                self.bump();
                let span = self.since(elem.span);
                elem = TypeExpr {
                    kind: TypeKind::Array(Box::new(elem)),
                    span,
                };
            }
            self.expect_p(P::LBrace)?;
            let mut items = Vec::new();
            if !self.is_p(P::RBrace) {
                loop {
                    items.push(self.expr()?);
                    if !self.eat_p(P::Comma) || self.is_p(P::RBrace) {
                        break;
                    }
                }
            }
            self.expect_p(P::RBrace)?;
            ExprKind::NewArray {
                placement,
                elem,
                dims: Vec::new(),
                init: Some(items),
            }
        } else if self.is_p(P::LBracket) {
            // `heap T[n]`, `heap T[n][m]`, `heap T[n][]`.
            let mut dims = Vec::new();
            while self.is_p(P::LBracket) && !self.nth_is_p(1, P::RBracket) {
                self.bump();
                dims.push(self.expr()?);
                self.expect_p(P::RBracket)?;
            }
            let mut elem = base;
            while self.is_p(P::LBracket) && self.nth_is_p(1, P::RBracket) {
                self.bump();
                self.bump();
                let span = self.since(elem.span);
                elem = TypeExpr {
                    kind: TypeKind::Array(Box::new(elem)),
                    span,
                };
            }
            ExprKind::NewArray {
                placement,
                elem,
                dims,
                init: None,
            }
        } else {
            self.error_here(format!(
                "expected '(' or '[' after the type of a creation, found {}",
                self.describe()
            ));
            return Err(Failed);
        };
        Ok(Expr {
            kind,
            span: self.since(start),
        })
    }

    /// `shared T[n]` (XPU §2.6).
    fn shared_array(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        let elem = self.type_base()?;
        self.expect_p(P::LBracket)?;
        let len = self.expr()?;
        self.expect_p(P::RBracket)?;
        Ok(Expr {
            kind: ExprKind::SharedArray {
                elem,
                len: Box::new(len),
            },
            span: self.since(start),
        })
    }

    /// `switch (e) { case 1, 2 -> a; default -> b; }` (LANGUAGE §7).
    fn switch_expr(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        self.expect_p(P::LParen)?;
        let selector = self.expr()?;
        self.expect_p(P::RParen)?;
        self.expect_p(P::LBrace)?;
        let mut arms = Vec::new();
        let mut has_default = false;
        while !self.is_p(P::RBrace) && !self.at_eof() {
            if !matches!(self.tok(), Tok::Kw(Kw::Case | Kw::Default)) {
                self.error_here(format!(
                    "expected 'case' or 'default', found {}",
                    self.describe()
                ));
                return Err(Failed);
            }
            let label_span = self.span();
            let (labels, arrow) = self.case_labels()?;
            if !arrow {
                self.error(label_span, "a switch expression uses 'case … ->' arms");
                return Err(Failed);
            }
            has_default |= labels
                .iter()
                .any(|l| matches!(l, crate::ast::CaseLabel::Default(_)));
            if matches!(self.tok(), Tok::P(P::LBrace) | Tok::Kw(Kw::Throw)) {
                let span = self.span();
                self.not_implemented(span, "block and 'throw' arms in switch expressions are");
                return Err(Failed);
            }
            let value = self.expr()?;
            self.expect_p(P::Semi)?;
            arms.push(SwitchArm { labels, value });
        }
        self.expect_p(P::RBrace)?;
        if !has_default {
            self.error(start, "a switch expression needs a 'default' arm");
        }
        let span = self.since(start);
        Ok(Expr {
            kind: ExprKind::Switch {
                selector: Box::new(selector),
                arms,
            },
            span,
        })
    }

    // ----- types -----

    /// `Type := Prim ('[' ']')* | QualName typeArgs? ('[' ']')*` (depth-counted).
    pub(super) fn parse_type(&mut self) -> PResult<TypeExpr> {
        self.deeper()?;
        let r = self.type_inner();
        self.shallower();
        r
    }

    fn type_inner(&mut self) -> PResult<TypeExpr> {
        let start = self.span();
        let mut ty = self.type_base()?;
        while self.is_p(P::LBracket) && self.nth_is_p(1, P::RBracket) {
            self.bump();
            self.bump();
            ty = TypeExpr {
                kind: TypeKind::Array(Box::new(ty)),
                span: self.since(start),
            };
        }
        Ok(ty)
    }

    /// A primitive or (possibly generic) named type, without `[]`.
    fn type_base(&mut self) -> PResult<TypeExpr> {
        let start = self.span();
        match self.tok().clone() {
            Tok::Kw(k) if k.prim().is_some() => {
                self.bump();
                let prim = k.prim().ok_or(Failed)?;
                Ok(TypeExpr {
                    kind: TypeKind::Prim(prim),
                    span: start,
                })
            }
            Tok::Kw(Kw::Void) => {
                self.error_here("'void' is only allowed as a method result");
                Err(Failed)
            }
            Tok::Ident(_) => {
                let name = self.qual_name("a type name")?;
                let args = if self.is_p(P::Lt) {
                    self.type_args()?
                } else {
                    Vec::new()
                };
                Ok(TypeExpr {
                    kind: TypeKind::Named { name, args },
                    span: self.since(start),
                })
            }
            _ => {
                self.error_here(format!("expected a type, found {}", self.describe()));
                Err(Failed)
            }
        }
    }

    /// `'<' typeArg (',' typeArg)* '>'`.
    fn type_args(&mut self) -> PResult<Vec<TypeArg>> {
        self.expect_p(P::Lt)?;
        let mut args = Vec::new();
        loop {
            args.push(self.type_arg()?);
            if !self.eat_p(P::Comma) {
                break;
            }
        }
        if self.eat_p(P::Gt) {
            Ok(args)
        } else {
            self.error_here(format!(
                "expected ',' or '>' in type arguments, found {}",
                self.describe()
            ));
            Err(Failed)
        }
    }

    /// A type, or an integer constant expression (`4`, `N * 2`, `-1`, `(4)`).
    fn type_arg(&mut self) -> PResult<TypeArg> {
        let is_type = match self.tok() {
            Tok::Kw(k) => k.prim().is_some(),
            Tok::Ident(_) => {
                // A name followed by an arithmetic operator is a constant expression.
                let mut i = 1;
                while self.nth_is_p(i, P::Dot) && matches!(self.nth(i + 1).tok, Tok::Ident(_)) {
                    i += 2;
                }
                !matches!(
                    self.nth(i).tok,
                    Tok::P(P::Plus | P::Minus | P::Star | P::Slash | P::Percent)
                )
            }
            _ => false,
        };
        if is_type {
            Ok(TypeArg::Type(self.parse_type()?))
        } else {
            Ok(TypeArg::Const(self.binary(PREC_ADD)?))
        }
    }
}

/// Whether `t` is `9223372036854775808L`, valid only directly under a unary minus.
fn is_min_long(t: &Tok) -> bool {
    *t == Tok::Int {
        value: 1 << 63,
        non_decimal: false,
        long: true,
    }
}

/// The assignment operator at `t`: compound operator and `#=` flag.
fn assign_op(t: &Tok) -> Option<(Option<BinOp>, bool)> {
    let Tok::P(p) = t else { return None };
    Some(match p {
        P::Assign => (None, false),
        P::HashEq => (None, true),
        P::PlusEq => (Some(BinOp::Add), false),
        P::MinusEq => (Some(BinOp::Sub), false),
        P::StarEq => (Some(BinOp::Mul), false),
        P::SlashEq => (Some(BinOp::Div), false),
        P::PercentEq => (Some(BinOp::Rem), false),
        P::AmpEq => (Some(BinOp::BitAnd), false),
        P::PipeEq => (Some(BinOp::BitOr), false),
        P::CaretEq => (Some(BinOp::BitXor), false),
        P::ShlEq => (Some(BinOp::Shl), false),
        P::ShrEq => (Some(BinOp::Shr), false),
        P::UshrEq => (Some(BinOp::Ushr), false),
        _ => return None,
    })
}
