//! Units, packages, imports, classes, members and annotations (LANGUAGE §5.1–5.6).

use super::{Failed, PResult, Parser};
use crate::ast::{
    Annotation, AnnotationArg, Block, ClassDecl, CtorDecl, DtorDecl, Expr, ExprKind, FieldDecl,
    Ident, Import, Member, MethodDecl, Modifiers, Param, TypeExpr, Unit,
};
use crate::diag::Span;
use crate::lexer::{Kw, Tok, P};

/// Annotations and modifiers in front of a declaration.
struct Prefix {
    annotations: Vec<Annotation>,
    modifiers: Modifiers,
    /// The first token of the prefix, if any.
    start: Option<Span>,
}

impl Parser {
    /// `unit := packageDecl? importDecl* classDecl*`.
    pub(super) fn unit(&mut self) -> Unit {
        let mut unit = Unit {
            file: self.file,
            package: None,
            package_annotations: Vec::new(),
            imports: Vec::new(),
            classes: Vec::new(),
        };
        while !self.at_eof() {
            let before = self.pos;
            let level = self.braces;
            if self.top_item(&mut unit).is_err() {
                self.close_groups(level);
                self.sync_top();
            }
            if self.pos == before {
                self.bump();
            }
        }
        unit
    }

    fn top_item(&mut self, unit: &mut Unit) -> PResult<()> {
        if self.is_kw(Kw::Import) {
            let start = self.span();
            let import = self.import()?;
            if !unit.classes.is_empty() {
                self.error(start, "imports must come before the classes");
            }
            unit.imports.push(import);
            return Ok(());
        }
        if self.is_p(P::At) && self.nth(1).tok == Tok::Kw(Kw::Interface) {
            let span = self.span();
            self.not_implemented(span, "annotation type declarations are");
            self.skip_decl();
            return Ok(());
        }
        let prefix = self.prefix()?;
        if self.is_kw(Kw::Package) {
            let start = self.span();
            self.bump();
            let name = self.qual_name("a package name")?;
            self.expect_p(P::Semi)?;
            if unit.package.is_some() || !unit.imports.is_empty() || !unit.classes.is_empty() {
                self.error(start, "the package declaration must come first");
            } else {
                unit.package = Some(name);
                unit.package_annotations = prefix.annotations;
            }
            return Ok(());
        }
        match self.tok() {
            Tok::Kw(Kw::Class) => {
                self.check_class_modifiers(&prefix);
                let class = self.class_decl(prefix)?;
                unit.classes.push(class);
                Ok(())
            }
            Tok::Kw(k @ (Kw::Interface | Kw::Enum | Kw::Record)) => {
                let span = self.span();
                let what = format!("'{}' declarations are", k.as_str());
                self.not_implemented(span, &what);
                self.skip_decl();
                Ok(())
            }
            Tok::P(_) | Tok::Eof => {
                self.error_here(format!(
                    "expected a class declaration, found {}",
                    self.describe()
                ));
                Err(Failed)
            }
            _ => {
                // A member or statement outside any class: a script unit (T3).
                let span = prefix.start.unwrap_or(self.span());
                self.not_implemented(span, "top-level statements and members (script units) are");
                let level = self.braces;
                self.sync_stmt(level);
                Ok(())
            }
        }
    }

    /// `import a.b.C;` / `import a.b.*;`.
    fn import(&mut self) -> PResult<crate::ast::Import> {
        let start = self.bump().span;
        if self.is_kw(Kw::Static) {
            self.not_implemented(start, "'import static' is");
            self.skip_decl();
            return Err(Failed);
        }
        let path = self.qual_name("an imported name")?;
        let mut wildcard = false;
        if self.is_p(P::Dot) && self.nth_is_p(1, P::Star) {
            self.bump();
            self.bump();
            wildcard = true;
        }
        self.expect_p(P::Semi)?;
        Ok(Import {
            path,
            wildcard,
            span: self.since(start),
        })
    }

    /// Annotations and modifiers in any order.
    fn prefix(&mut self) -> PResult<Prefix> {
        let mut pre = Prefix {
            annotations: Vec::new(),
            modifiers: Modifiers::default(),
            start: None,
        };
        loop {
            let span = self.span();
            match self.tok() {
                Tok::P(P::At) => {
                    if self.nth(1).tok == Tok::Kw(Kw::Interface) {
                        return Ok(pre);
                    }
                    pre.start.get_or_insert(span);
                    let a = self.annotation()?;
                    pre.annotations.push(a);
                }
                Tok::Kw(
                    k @ (Kw::Public
                    | Kw::Protected
                    | Kw::Private
                    | Kw::Static
                    | Kw::Final
                    | Kw::Native),
                ) => {
                    let k = *k;
                    pre.start.get_or_insert(span);
                    self.bump();
                    let m = &mut pre.modifiers;
                    let flag = match k {
                        Kw::Public => &mut m.public,
                        Kw::Protected => &mut m.protected,
                        Kw::Private => &mut m.private,
                        Kw::Static => &mut m.is_static,
                        Kw::Native => &mut m.native,
                        _ => &mut m.is_final,
                    };
                    let repeated = *flag;
                    *flag = true;
                    if repeated {
                        self.error(span, format!("repeated modifier '{}'", k.as_str()));
                    } else if [m.public, m.protected, m.private]
                        .iter()
                        .filter(|&&on| on)
                        .count()
                        > 1
                    {
                        self.error(
                            span,
                            format!("'{}' conflicts with another access modifier", k.as_str()),
                        );
                    }
                }
                Tok::Kw(
                    k @ (Kw::Abstract
                    | Kw::Sealed
                    | Kw::NonSealed
                    | Kw::Strictfp
                    | Kw::Const
                    | Kw::Async
                    | Kw::Transient
                    | Kw::Volatile
                    | Kw::Default),
                ) => {
                    let what = format!("the modifier '{}' is", k.as_str());
                    pre.start.get_or_insert(span);
                    self.not_implemented(span, &what);
                    self.bump();
                }
                _ => return Ok(pre),
            }
        }
    }

    /// Top-level classes accept only `public` and `final`.
    fn check_class_modifiers(&mut self, prefix: &Prefix) {
        let m = &prefix.modifiers;
        if m.protected || m.private || m.is_static || m.native {
            let span = prefix.start.unwrap_or(self.span());
            self.error(span, "a top-level class may only be 'public' and 'final'");
        }
    }

    /// `'@' qualifiedName ('(' args ')')?`.
    pub(super) fn annotation(&mut self) -> PResult<Annotation> {
        let start = self.expect_p(P::At)?;
        let name = self.qual_name("an annotation name")?;
        let mut args = Vec::new();
        if self.eat_p(P::LParen) {
            if !self.is_p(P::RParen) {
                loop {
                    let mut arg_name = None;
                    if self.is_ident()
                        && (self.nth_is_p(1, P::Assign) || self.nth_is_p(1, P::Colon))
                    {
                        arg_name = Some(self.ident("a name")?);
                        self.bump();
                    }
                    let value = self.annotation_value()?;
                    args.push(AnnotationArg {
                        name: arg_name,
                        value,
                    });
                    if !self.eat_p(P::Comma) {
                        break;
                    }
                }
            }
            self.expect_p(P::RParen)?;
        }
        Ok(Annotation {
            name,
            args,
            span: self.since(start),
        })
    }

    /// A constant expression, `{v, …}` or a nested annotation (depth-counted).
    fn annotation_value(&mut self) -> PResult<Expr> {
        self.deeper()?;
        let r = self.annotation_value_inner();
        self.shallower();
        r
    }

    fn annotation_value_inner(&mut self) -> PResult<Expr> {
        let start = self.span();
        if self.eat_p(P::LBrace) {
            let mut items = Vec::new();
            while !self.is_p(P::RBrace) {
                items.push(self.annotation_value()?);
                if !self.eat_p(P::Comma) {
                    break;
                }
            }
            self.expect_p(P::RBrace)?;
            return Ok(Expr {
                kind: ExprKind::ArrayLit(items),
                span: self.since(start),
            });
        }
        if self.is_p(P::At) {
            // The AST has no annotation-valued expression; a nested annotation is kept as a
            // name `@Qualified.Name` (only ignored annotations can hold one).
            let a = self.annotation()?;
            let name = Ident {
                name: format!("@{}", a.name.joined()),
                span: a.span,
            };
            return Ok(Expr {
                kind: ExprKind::Name(name),
                span: a.span,
            });
        }
        self.ternary()
    }

    /// `class Name { member* }` (the prefix is already parsed).
    fn class_decl(&mut self, prefix: Prefix) -> PResult<ClassDecl> {
        let class_tok = self.bump().span;
        let start = prefix.start.unwrap_or(class_tok);
        let name = self.ident("a class name")?;
        // T3 header clauses: type parameters, extends, implements, permits.
        if matches!(
            self.tok(),
            Tok::P(P::Lt) | Tok::Kw(Kw::Extends | Kw::Implements | Kw::Permits)
        ) {
            let span = self.span();
            let what = match self.tok() {
                Tok::P(_) => "class type parameters are".to_string(),
                t => format!("{} is", super::describe(t)),
            };
            self.not_implemented(span, &what);
            while !matches!(
                self.tok(),
                Tok::Eof | Tok::P(P::LBrace | P::Semi | P::RBrace)
            ) {
                self.bump();
            }
        }
        self.expect_p(P::LBrace)?;
        let level = self.braces;
        let mut members = Vec::new();
        while !self.is_p(P::RBrace) && !self.at_eof() {
            let before = self.pos;
            match self.member(&name) {
                Ok(Some(m)) => members.push(m),
                Ok(None) => {}
                Err(Failed) => self.sync_member(level),
            }
            if self.pos == before {
                self.bump();
            }
        }
        self.expect_p(P::RBrace)?;
        Ok(ClassDecl {
            annotations: prefix.annotations,
            modifiers: prefix.modifiers,
            name,
            members,
            span: self.since(start),
        })
    }

    /// One member; `None` for a skipped one (`;`, or a reported T3 construct).
    fn member(&mut self, class: &Ident) -> PResult<Option<Member>> {
        if self.is_p(P::Semi) {
            self.bump();
            return Ok(None);
        }
        if self.is_p(P::At) && self.nth(1).tok == Tok::Kw(Kw::Interface) {
            let span = self.span();
            self.not_implemented(span, "nested annotation types are");
            self.skip_decl();
            return Ok(None);
        }
        let prefix = self.prefix()?;
        let here = self.span();
        let start = prefix.start.unwrap_or(here);
        match self.tok().clone() {
            Tok::P(P::LBrace) => {
                if prefix.modifiers.is_static {
                    let block = self.block()?;
                    return Ok(Some(Member::StaticInit(block)));
                }
                self.not_implemented(here, "instance initialiser blocks are");
                self.skip_braces();
                Ok(None)
            }
            Tok::P(P::Tilde) => {
                self.bump();
                let name = self.ident("the class name")?;
                self.expect_p(P::LParen)?;
                if !self.is_p(P::RParen) {
                    self.error_here("a destructor takes no parameters");
                    return Err(Failed);
                }
                self.bump();
                let body = self.block()?;
                Ok(Some(Member::Destructor(DtorDecl {
                    annotations: prefix.annotations,
                    name,
                    body,
                    span: self.since(start),
                })))
            }
            Tok::Kw(Kw::View) => {
                self.not_implemented(here, "view declarations are");
                self.skip_decl();
                Ok(None)
            }
            Tok::Kw(Kw::Operator) => {
                self.not_implemented(here, "operator declarations are");
                self.skip_decl();
                Ok(None)
            }
            Tok::Kw(k @ (Kw::Class | Kw::Interface | Kw::Enum | Kw::Record)) => {
                let what = if k == Kw::Class {
                    "nested classes are".to_string()
                } else {
                    format!("nested '{}' declarations are", k.as_str())
                };
                self.not_implemented(here, &what);
                self.skip_decl();
                Ok(None)
            }
            Tok::P(P::Lt) => {
                self.not_implemented(here, "method type parameters are");
                Err(Failed)
            }
            Tok::Kw(Kw::Void) => {
                self.bump();
                let name = self.ident("a method name")?;
                if !self.is_p(P::LParen) {
                    self.error(here, "a field cannot have type 'void'");
                    return Err(Failed);
                }
                self.method(prefix, start, None, false, name).map(Some)
            }
            Tok::Ident(n) if self.nth_is_p(1, P::LParen) => {
                let name = self.ident("a name")?;
                if n != class.name {
                    self.error(here, format!("method '{n}' needs a result type (or 'void'); a constructor must be named '{}'", class.name));
                    return Err(Failed);
                }
                if prefix.modifiers.native {
                    self.error(here, "'native' applies to static methods only");
                }
                if prefix.modifiers.is_static {
                    self.error(here, "a constructor cannot be 'static'");
                }
                let params = self.params()?;
                let body = self.method_body()?;
                Ok(Some(Member::Constructor(CtorDecl {
                    annotations: prefix.annotations,
                    modifiers: prefix.modifiers,
                    name,
                    params,
                    body,
                    span: self.since(start),
                })))
            }
            _ => {
                let transfer = self.is_p(P::Hash);
                if transfer {
                    self.bump();
                }
                let ty = self.parse_type()?;
                if self.is_kw(Kw::Operator) {
                    let span = self.span();
                    self.not_implemented(span, "operator declarations are");
                    self.skip_decl();
                    return Ok(None);
                }
                let name = self.ident("a member name")?;
                if self.is_p(P::LParen) {
                    return self
                        .method(prefix, start, Some(ty), transfer, name)
                        .map(Some);
                }
                if transfer {
                    self.error(
                        here,
                        "'#' is only allowed in method result and parameter types",
                    );
                }
                self.field(prefix, start, ty, name)
                    .map(|f| Some(Member::Field(f)))
            }
        }
    }

    fn method(
        &mut self,
        prefix: Prefix,
        start: Span,
        ret: Option<TypeExpr>,
        ret_transfer: bool,
        name: Ident,
    ) -> PResult<Member> {
        let params = self.params()?;
        // A `native` method's declaration ends in `;`: the host supplies the body.
        let body = if prefix.modifiers.native && self.is_p(P::Semi) {
            let span = self.span();
            self.bump();
            Block {
                stmts: Vec::new(),
                span,
            }
        } else {
            let body = self.method_body()?;
            if prefix.modifiers.native {
                self.error(
                    name.span,
                    "a native method has no body: end its declaration with ';'",
                );
            }
            body
        };
        Ok(Member::Method(MethodDecl {
            annotations: prefix.annotations,
            modifiers: prefix.modifiers,
            ret,
            ret_transfer,
            name,
            params,
            body,
            span: self.since(start),
        }))
    }

    /// `throws …` (T3) then the body block.
    fn method_body(&mut self) -> PResult<Block> {
        if self.is_kw(Kw::Throws) {
            let span = self.span();
            self.not_implemented(span, "'throws' clauses are");
            while !matches!(
                self.tok(),
                Tok::Eof | Tok::P(P::LBrace | P::Semi | P::RBrace)
            ) {
                self.bump();
            }
        }
        if self.is_p(P::Semi) {
            self.error_here("expected a method body '{', found ';'");
            return Err(Failed);
        }
        self.block()
    }

    /// `'(' (final? #? Type name),* ')'`.
    fn params(&mut self) -> PResult<Vec<Param>> {
        self.expect_p(P::LParen)?;
        let mut params = Vec::new();
        if self.eat_p(P::RParen) {
            return Ok(params);
        }
        loop {
            // Parameter annotations are accepted (an unknown one is warned about) and ignored.
            let mut annotations = vec![];
            while self.is_p(P::At) {
                annotations.push(self.annotation()?);
            }
            let start = self.span();
            let is_final = self.eat_kw(Kw::Final);
            let transfer = self.eat_p(P::Hash);
            let ty = self.parse_type()?;
            if self.is_p(P::Ellipsis) {
                let span = self.span();
                self.not_implemented(span, "variable-arity parameters are");
                return Err(Failed);
            }
            let name = self.ident("a parameter name")?;
            if self.is_p(P::LBracket) {
                self.error_here("C-style array declarators are not supported: write 'T[] name'");
                return Err(Failed);
            }
            params.push(Param {
                is_final,
                transfer,
                start,
                annotations,
                ty,
                name,
            });
            if !self.eat_p(P::Comma) {
                break;
            }
        }
        self.expect_p(P::RParen)?;
        Ok(params)
    }

    /// `Type a = init, b;` after the first name.
    fn field(
        &mut self,
        prefix: Prefix,
        start: Span,
        ty: TypeExpr,
        first: Ident,
    ) -> PResult<FieldDecl> {
        if prefix.modifiers.native {
            self.error(first.span, "'native' applies to static methods only");
        }
        let mut vars = Vec::new();
        let mut name = first;
        loop {
            if self.is_p(P::LBracket) {
                self.error_here("C-style array declarators are not supported: write 'T[] name'");
                return Err(Failed);
            }
            let mut init = None;
            if self.is_p(P::Assign) || self.is_p(P::HashEq) {
                let transfer = self.bump().tok == Tok::P(P::HashEq);
                if self.is_p(P::LBrace) {
                    self.error_here("array initialisers are written '[a, b]' or 'heap T[] {a, b}'");
                    return Err(Failed);
                }
                let value = self.expr()?;
                // `f #= v` with `v` a plain name means `f = #v`; otherwise `#=` is `=` (§6.3).
                init = Some(if transfer && matches!(value.kind, ExprKind::Name(_)) {
                    let span = value.span;
                    Expr {
                        kind: ExprKind::Transfer(Box::new(value)),
                        span,
                    }
                } else {
                    value
                });
            }
            vars.push((name, init));
            if !self.eat_p(P::Comma) {
                break;
            }
            name = self.ident("a field name")?;
        }
        self.expect_p(P::Semi)?;
        Ok(FieldDecl {
            annotations: prefix.annotations,
            modifiers: prefix.modifiers,
            ty,
            vars,
            span: self.since(start),
        })
    }
}
