//! Blocks and statements (LANGUAGE §7, XPU §3.5).

use super::{is_statement_expr, Failed, PResult, Parser};
use crate::ast::{
    Block, CaseLabel, Declarator, Expr, ForInit, Ident, LocalDecl, Stmt, StmtKind, SwitchGroup,
    TypeExpr, TypeKind,
};
use crate::diag::{code, Diag, Span};
use crate::lexer::{Kw, Tok, P};

impl Parser {
    /// `'{' statement* '}'`. A missing `}` is reported but the block is still returned.
    pub(super) fn block(&mut self) -> PResult<Block> {
        let start = self.expect_p(P::LBrace)?;
        let level = self.braces;
        let mut stmts = Vec::new();
        while !self.is_p(P::RBrace) && !self.at_eof() {
            let before = self.pos;
            let was_too_deep = self.too_deep;
            match self.stmt() {
                Ok(s) => stmts.push(s),
                // Past the depth limit, the rest of this block is not worth parsing.
                Err(Failed) if self.too_deep && !was_too_deep => self.skip_to_block_end(level),
                Err(Failed) => self.sync_stmt(level),
            }
            if self.pos == before {
                self.bump();
            }
        }
        if !self.eat_p(P::RBrace) {
            self.error_here(format!("expected '}}', found {}", self.describe()));
        }
        Ok(Block {
            stmts,
            span: self.since(start),
        })
    }

    /// One statement or local declaration (depth-counted).
    pub(super) fn stmt(&mut self) -> PResult<Stmt> {
        self.deeper()?;
        let r = self.stmt_inner();
        self.shallower();
        r
    }

    /// Dispatches through a function pointer so that only the chosen form's locals are on the
    /// stack: statements nest deeply, and debug builds do not share stack slots between arms.
    fn stmt_inner(&mut self) -> PResult<Stmt> {
        type Form = fn(&mut Parser) -> PResult<StmtKind>;
        let start = self.span();
        let t = self.tok().clone();
        let form: Form = match t {
            Tok::P(P::LBrace) => |p| Ok(StmtKind::Block(p.block()?)),
            Tok::P(P::Semi) => |p| {
                p.bump();
                Ok(StmtKind::Empty)
            },
            Tok::Kw(Kw::If) => Parser::if_stmt,
            Tok::Kw(Kw::While) => Parser::while_stmt,
            Tok::Kw(Kw::Do) => Parser::do_stmt,
            Tok::Kw(Kw::For) => Parser::for_stmt,
            Tok::Kw(Kw::Switch) => Parser::switch_stmt,
            Tok::Kw(Kw::Return) => Parser::return_stmt,
            Tok::Kw(Kw::Break | Kw::Continue) => Parser::jump_stmt,
            Tok::Kw(
                Kw::Try
                | Kw::Throw
                | Kw::Yield
                | Kw::Assert
                | Kw::Scope
                | Kw::Class
                | Kw::Interface
                | Kw::Enum
                | Kw::Record
                | Kw::Const
                | Kw::Async
                | Kw::Spawn
                | Kw::Detach,
            ) => Parser::t3_stmt,
            Tok::Kw(Kw::Final) => |p| {
                let start = p.bump().span;
                p.local_stmt_from(start, true)
            },
            Tok::Kw(k @ (Kw::Else | Kw::Case | Kw::Default | Kw::Catch | Kw::Finally)) => {
                let msg = format!("'{}' without a matching statement", k.as_str());
                self.error(start, msg);
                return Err(Failed);
            }
            Tok::Ident(_) if self.nth_is_p(1, P::Colon) => Parser::labeled_stmt,
            Tok::Kw(k) if k.prim().is_some() => |p| p.local_stmt_from(p.span(), false),
            Tok::P(P::Hash) | Tok::Ident(_) if self.looks_like_decl() => {
                |p| p.local_stmt_from(p.span(), false)
            }
            _ => |p| {
                let e = p.expr_stmt()?;
                p.expect_p(P::Semi)?;
                Ok(StmtKind::Expr(e))
            },
        };
        let kind = form(self)?;
        Ok(Stmt {
            kind,
            span: self.since(start),
        })
    }

    /// The body of `if`, `else`, `while`, `do` or `for`: a statement, which a local
    /// declaration is not (LANGUAGE §7: declarations live directly in blocks).
    fn body(&mut self, of: &str) -> PResult<Box<Stmt>> {
        let s = self.stmt()?;
        if matches!(s.kind, StmtKind::Local(_)) {
            self.error(
                s.span,
                format!("a declaration cannot be the body of '{of}' (put it in a block)"),
            );
        }
        Ok(Box::new(s))
    }

    fn if_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        let cond = self.paren_expr()?;
        let then = self.body("if")?;
        let els = if self.eat_kw(Kw::Else) {
            Some(self.body("else")?)
        } else {
            None
        };
        Ok(StmtKind::If { cond, then, els })
    }

    fn while_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        let cond = self.paren_expr()?;
        let body = self.body("while")?;
        Ok(StmtKind::While { cond, body })
    }

    fn do_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        let body = self.body("do")?;
        if !self.eat_kw(Kw::While) {
            self.error_here(format!(
                "expected 'while' after the body of 'do', found {}",
                self.describe()
            ));
            return Err(Failed);
        }
        let cond = self.paren_expr()?;
        self.expect_p(P::Semi)?;
        Ok(StmtKind::DoWhile { body, cond })
    }

    fn return_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        let transfer = self.eat_p(P::HashEq);
        let value = if self.is_p(P::Semi) && !transfer {
            None
        } else {
            Some(self.expr()?)
        };
        self.expect_p(P::Semi)?;
        Ok(StmtKind::Return { value, transfer })
    }

    /// `break label?;` / `continue label?;`.
    fn jump_stmt(&mut self) -> PResult<StmtKind> {
        let is_break = self.bump().tok == Tok::Kw(Kw::Break);
        let label = if self.is_ident() {
            Some(self.ident("a label")?)
        } else {
            None
        };
        self.expect_p(P::Semi)?;
        Ok(if is_break {
            StmtKind::Break(label)
        } else {
            StmtKind::Continue(label)
        })
    }

    /// A T3 statement: reported at its first token and skipped (an empty statement remains).
    fn t3_stmt(&mut self) -> PResult<StmtKind> {
        let start = self.span();
        let what = match self.tok() {
            Tok::Kw(Kw::Class | Kw::Interface | Kw::Enum | Kw::Record) => {
                "local type declarations are".to_string()
            }
            t => format!("{} is", super::describe(t)),
        };
        self.not_implemented(start, &what);
        self.skip_t3_stmt();
        Ok(StmtKind::Empty)
    }

    fn labeled_stmt(&mut self) -> PResult<StmtKind> {
        let label = self.ident("a label")?;
        self.bump();
        let body = Box::new(self.stmt()?);
        Ok(StmtKind::Labeled { label, body })
    }

    /// A local declaration statement (after `final`, if any) with its `;`.
    fn local_stmt_from(&mut self, start: Span, is_final: bool) -> PResult<StmtKind> {
        let decl = self.local_decl(start, is_final)?;
        self.expect_p(P::Semi)?;
        Ok(StmtKind::Local(decl))
    }

    /// An expression that must be a statement expression.
    fn expr_stmt(&mut self) -> PResult<Expr> {
        if self.java_new() {
            return Err(Failed);
        }
        let e = self.expr()?;
        if !is_statement_expr(&e) {
            self.error(e.span, "not a statement");
        }
        Ok(e)
    }

    /// `'(' expr ')'`.
    fn paren_expr(&mut self) -> PResult<Expr> {
        self.expect_p(P::LParen)?;
        let e = self.expr()?;
        self.expect_p(P::RParen)?;
        Ok(e)
    }

    /// Whether a statement starting here (an identifier or `#`) is `#? Type Identifier`:
    /// tried speculatively.
    fn looks_like_decl(&mut self) -> bool {
        let saved = self.save();
        self.eat_p(P::Hash);
        let ok = self.parse_type().is_ok() && self.at_declarator_name();
        self.restore(saved);
        ok
    }

    /// An identifier, or a reserved word used as a name (`int32 class = 1`, reported later).
    fn at_declarator_name(&self) -> bool {
        match self.tok() {
            Tok::Ident(_) => true,
            Tok::Kw(k) => {
                k.prim().is_none()
                    && matches!(
                        self.nth(1).tok,
                        Tok::P(P::Assign | P::HashEq | P::Semi | P::Comma | P::Colon)
                    )
            }
            _ => false,
        }
    }

    /// `#? Type name (= init)? (, name (= init)?)*` after an optional `final` (consumed by the
    /// caller); no `;`.
    fn local_decl(&mut self, start: Span, is_final: bool) -> PResult<LocalDecl> {
        let ty = self.local_type()?;
        let name = self.ident("a variable name")?;
        self.local_decl_rest(start, is_final, ty, name)
    }

    /// The type of a local: `#` is retired there, `var` is T3.
    fn local_type(&mut self) -> PResult<TypeExpr> {
        if self.is_p(P::Hash) {
            let span = self.span();
            self.diags.push(Diag::error(
                code::TYPE_TRANSFER_RETIRED,
                span,
                "'#' in a local variable's type is retired: write 'T x #= e' or 'T x = #v'",
            ));
            self.bump();
        }
        let ty = self.parse_type()?;
        if let TypeKind::Named { name, args } = &ty.kind {
            if name.parts.len() == 1 && name.parts[0].name == "var" && args.is_empty() {
                self.not_implemented(ty.span, "'var' declarations are");
                return Err(Failed);
            }
        }
        Ok(ty)
    }

    fn local_decl_rest(
        &mut self,
        start: Span,
        is_final: bool,
        ty: TypeExpr,
        first: Ident,
    ) -> PResult<LocalDecl> {
        let mut vars = Vec::new();
        let mut name = first;
        loop {
            if self.is_p(P::LBracket) {
                self.error_here("C-style array declarators are not supported: write 'T[] name'");
                return Err(Failed);
            }
            let mut init = None;
            let mut transfer = false;
            if self.is_p(P::Assign) || self.is_p(P::HashEq) {
                transfer = self.bump().tok == Tok::P(P::HashEq);
                if self.is_p(P::LBrace) {
                    self.error_here("array initialisers are written '[a, b]' or 'heap T[] {a, b}'");
                    return Err(Failed);
                }
                init = Some(self.expr()?);
            }
            vars.push(Declarator {
                name,
                init,
                transfer,
            });
            if !self.eat_p(P::Comma) {
                break;
            }
            name = self.ident("a variable name")?;
        }
        Ok(LocalDecl {
            is_final,
            ty,
            vars,
            span: self.since(start),
        })
    }

    /// `for (init; cond; update) body` or `for ((I i,)? T v : e) body`.
    fn for_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        self.expect_p(P::LParen)?;
        let init_start = self.span();
        let mut init = None;
        if !self.is_p(P::Semi) {
            let is_final = self.is_kw(Kw::Final);
            let is_decl = is_final
                || matches!(self.tok(), Tok::Kw(k) if k.prim().is_some())
                || (matches!(self.tok(), Tok::Ident(_) | Tok::P(P::Hash))
                    && self.looks_like_decl());
            if is_decl {
                if is_final {
                    self.bump();
                }
                let ty = self.local_type()?;
                let name = self.ident("a variable name")?;
                if self.eat_p(P::Colon) {
                    return self.for_each_rest(None, (false, is_final), ty, name);
                }
                if self.is_p(P::Comma) {
                    // `for (I i, T v : e)`: try the index form first.
                    let saved = self.save();
                    self.bump();
                    let final2 = self.is_kw(Kw::Final);
                    if final2 {
                        self.bump();
                    }
                    if let Ok(ty2) = self.parse_type() {
                        if self.is_ident() && self.nth_is_p(1, P::Colon) {
                            let name2 = self.ident("a variable name")?;
                            self.bump();
                            let finals = (is_final, final2);
                            return self.for_each_rest(Some((ty, name)), finals, ty2, name2);
                        }
                    }
                    self.restore(saved);
                }
                init = Some(ForInit::Local(
                    self.local_decl_rest(init_start, is_final, ty, name)?,
                ));
            } else {
                init = Some(ForInit::Exprs(self.expr_stmt_list()?));
            }
        }
        self.expect_p(P::Semi)?;
        let cond = if self.is_p(P::Semi) {
            None
        } else {
            Some(self.expr()?)
        };
        self.expect_p(P::Semi)?;
        let update = if self.is_p(P::RParen) {
            Vec::new()
        } else {
            self.expr_stmt_list()?
        };
        self.expect_p(P::RParen)?;
        let body = self.body("for")?;
        Ok(StmtKind::For {
            init,
            cond,
            update,
            body,
        })
    }

    fn for_each_rest(
        &mut self,
        index: Option<(TypeExpr, Ident)>,
        finals: (bool, bool),
        ty: TypeExpr,
        name: Ident,
    ) -> PResult<StmtKind> {
        let iterable = self.expr()?;
        self.expect_p(P::RParen)?;
        let body = self.body("for")?;
        Ok(StmtKind::ForEach {
            index,
            finals,
            ty,
            name,
            iterable,
            body,
        })
    }

    fn expr_stmt_list(&mut self) -> PResult<Vec<Expr>> {
        let mut v = vec![self.expr_stmt()?];
        while self.eat_p(P::Comma) {
            v.push(self.expr_stmt()?);
        }
        Ok(v)
    }

    /// `switch (e) { groups }`: stacked `case K:` labels with fall-through, or arrow arms
    /// `case K -> stmt` (each becomes a group ending in `break`).
    fn switch_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        let selector = self.paren_expr()?;
        self.expect_p(P::LBrace)?;
        let level = self.braces;
        let mut groups: Vec<SwitchGroup> = Vec::new();
        // Whether the labels are `case K ->` (else `case K:`), once the first is seen.
        let mut form = None;
        while !self.is_p(P::RBrace) && !self.at_eof() {
            let before = self.pos;
            if let Err(Failed) = self.switch_group(&mut groups, &mut form) {
                self.sync_stmt(level);
            }
            if self.pos == before {
                self.bump();
            }
        }
        self.expect_p(P::RBrace)?;
        Ok(StmtKind::Switch { selector, groups })
    }

    fn switch_group(
        &mut self,
        groups: &mut Vec<SwitchGroup>,
        form: &mut Option<bool>,
    ) -> PResult<()> {
        if !matches!(self.tok(), Tok::Kw(Kw::Case | Kw::Default)) {
            self.error_here(format!(
                "expected 'case' or 'default', found {}",
                self.describe()
            ));
            return Err(Failed);
        }
        let mut labels = Vec::new();
        let mut arrow = false;
        while matches!(self.tok(), Tok::Kw(Kw::Case | Kw::Default)) {
            let at = self.span();
            let (l, is_arrow) = self.case_labels()?;
            // One switch uses one form of label, as in Java: `case 1:` falls through, an
            // arrow arm does not, and a mix leaves that unclear.
            if form.is_some_and(|f| f != is_arrow) {
                self.error(at, "a switch cannot mix 'case …:' and 'case … ->' labels");
                return Err(Failed);
            }
            *form = Some(is_arrow);
            labels.extend(l);
            if is_arrow {
                arrow = true;
                break;
            }
        }
        let mut body = Vec::new();
        if arrow {
            let start = self.span();
            let stmt = match self.tok() {
                Tok::P(P::LBrace) => {
                    let b = self.block()?;
                    Stmt {
                        span: b.span,
                        kind: StmtKind::Block(b),
                    }
                }
                Tok::Kw(Kw::Throw) => {
                    self.not_implemented(start, "'throw' is");
                    self.skip_t3_stmt();
                    return Ok(());
                }
                _ => {
                    let e = self.expr_stmt()?;
                    self.expect_p(P::Semi)?;
                    Stmt {
                        kind: StmtKind::Expr(e),
                        span: self.since(start),
                    }
                }
            };
            let span = stmt.span;
            body.push(stmt);
            body.push(Stmt {
                kind: StmtKind::Break(None),
                span,
            });
        } else {
            let level = self.braces;
            while !matches!(
                self.tok(),
                Tok::Kw(Kw::Case | Kw::Default) | Tok::P(P::RBrace) | Tok::Eof
            ) {
                let before = self.pos;
                match self.stmt() {
                    Ok(s) => body.push(s),
                    Err(Failed) => self.sync_stmt(level),
                }
                if self.pos == before {
                    self.bump();
                }
            }
        }
        groups.push(SwitchGroup { labels, body });
        Ok(())
    }

    /// `case K (, K)* (':' | '->')` or `default (':' | '->')`; returns the labels and whether
    /// the arrow form was used.
    pub(super) fn case_labels(&mut self) -> PResult<(Vec<CaseLabel>, bool)> {
        let mut labels = Vec::new();
        if self.is_kw(Kw::Default) {
            labels.push(CaseLabel::Default(self.bump().span));
        } else {
            self.bump();
            loop {
                labels.push(CaseLabel::Case(self.case_constant()?));
                if !self.eat_p(P::Comma) {
                    break;
                }
            }
        }
        if self.eat_p(P::Arrow) {
            return Ok((labels, true));
        }
        if self.eat_p(P::Colon) {
            return Ok((labels, false));
        }
        self.error_here(format!(
            "expected ':' or '->' after a case label, found {}",
            self.describe()
        ));
        Err(Failed)
    }

    /// Skips a T3 statement: to after its `;` or its blocks (with `catch`/`finally`/`else`).
    fn skip_t3_stmt(&mut self) {
        loop {
            match self.tok() {
                Tok::Eof | Tok::P(P::RBrace) => return,
                Tok::P(P::Semi) => {
                    self.bump();
                    return;
                }
                Tok::P(P::LBrace) => {
                    self.skip_braces();
                    if !matches!(self.tok(), Tok::Kw(Kw::Catch | Kw::Finally | Kw::Else)) {
                        return;
                    }
                }
                _ => {
                    self.bump();
                }
            }
        }
    }
}
