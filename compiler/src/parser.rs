//! The parser (LANGUAGE §5.1–5.6, §7, §8, §9; XPU §3.4–3.5): hand-written recursive descent
//! for declarations and statements, precedence climbing for binary operators.
//!
//! * [`parse`] is the only entry point: it lexes, parses and returns the [`Unit`] plus every
//!   lexical and syntactic diagnostic, sorted by position.
//! * **Recovery.** A failing construct reports one diagnostic and returns [`Failed`]; the loops
//!   over members, statements and top-level items then skip to a synchronisation point (`;`, a
//!   balanced `{ … }`, a `}` or the start of the next member/statement). Every loop iteration
//!   consumes at least one token, so parsing always terminates.
//! * **Depth bound.** Expressions, statements and types nest at most [`MAX_DEPTH`] levels; a link
//!   of a left-associative chain (`a + b + …`, `x.f.g…`, `s.m().m()…`) costs a sixteenth of a
//!   level ([`LINKS_PER_LEVEL`]), as it deepens the tree by one node but the parser builds it in
//!   a loop, so a flat chain may have some 3 000 links. Past the bound the parser reports
//!   `nesting too deep` and stops descending. The checker relies on this bound: the tree it
//!   walks is at most `MAX_DEPTH * LINKS_PER_LEVEL` nodes deep.
//! * **Speculation.** A statement starting with `Type Identifier` is a declaration; this is tried
//!   with backtracking ([`Parser::save`] / [`Parser::restore`]), as are type arguments after a
//!   library generic name in expressions.
//! * T3 constructs are reported as `CAJETA_ERROR_NOT_IMPLEMENTED` at their first token and skipped.

mod decl;
mod expr;
mod stmt;

use crate::ast::{Expr, ExprKind, Ident, QualName, Unit};
use crate::diag::{code, Diag, FileId, Span};
use crate::lexer::{lex, Kw, Tok, Token, P};

/// How deeply expressions, statements and types may nest.
pub const MAX_DEPTH: u32 = 200;

/// Links of a left-associative chain that cost as much depth as one nesting level.
pub const LINKS_PER_LEVEL: u32 = 16;

/// Parses one file. Returns the unit (possibly partial, after error recovery) and all
/// diagnostics found (lexical and syntactic), in source order.
pub fn parse(file: FileId, text: &str) -> (Unit, Vec<Diag>) {
    let (toks, lex_diags) = lex(file, text);
    let mut p = Parser {
        toks,
        pos: 0,
        file,
        diags: Vec::new(),
        depth: 0,
        prev_end: 0,
        too_deep: false,
        case_label: false,
        braces: 0,
    };
    let unit = p.unit();
    let mut diags = lex_diags;
    diags.append(&mut p.diags);
    // Source order; a stable sort keeps a lexical error before a parse error at the same place,
    // and the parse error (usually a consequence) is then dropped.
    diags.sort_by_key(|d| d.span.map_or(u32::MAX, |s| s.start));
    diags.dedup_by(|b, a| a.span.is_some() && a.span.map(|s| s.start) == b.span.map(|s| s.start));
    (unit, diags)
}

/// Marker: a diagnostic has been reported and the caller should recover.
#[derive(Debug)]
pub(crate) struct Failed;

/// Result of a parsing function.
pub(crate) type PResult<T> = Result<T, Failed>;

/// A snapshot for backtracking.
#[derive(Copy, Clone)]
struct Saved {
    pos: usize,
    diags: usize,
    depth: u32,
    prev_end: u32,
    too_deep: bool,
    braces: u32,
}

/// The parser state over one token list.
struct Parser {
    /// The tokens; the last one is always [`Tok::Eof`].
    toks: Vec<Token>,
    /// Index of the current token.
    pos: usize,
    file: FileId,
    diags: Vec<Diag>,
    /// Current nesting depth, in links (see [`MAX_DEPTH`], [`LINKS_PER_LEVEL`]).
    depth: u32,
    /// End of the last consumed token (for spans).
    prev_end: u32,
    /// `nesting too deep` was reported (reported once per file).
    too_deep: bool,
    /// Number of `{` consumed and not yet closed (recovery never skips past the `}` that
    /// closes the block or class body it recovers in).
    braces: u32,
    /// Parsing a case label: a `->` after it ends the label, it opens no lambda.
    case_label: bool,
}

/// The library generic types whose name opens type arguments in expressions (LANGUAGE §9).
const GENERIC_TYPES: &[&str] = &[
    "KernelBuffer",
    "Buffer",
    "Shared",
    "Vector",
    "Matrix",
    "Quaternion",
];

impl Parser {
    // ----- token access -----

    fn tok(&self) -> &Tok {
        &self.toks[self.pos].tok
    }

    fn nth(&self, n: usize) -> &Token {
        let last = self.toks.len() - 1;
        &self.toks[(self.pos + n).min(last)]
    }

    fn span(&self) -> Span {
        self.toks[self.pos].span
    }

    fn at_eof(&self) -> bool {
        matches!(self.tok(), Tok::Eof)
    }

    fn is_p(&self, p: P) -> bool {
        *self.tok() == Tok::P(p)
    }

    fn nth_is_p(&self, n: usize, p: P) -> bool {
        self.nth(n).tok == Tok::P(p)
    }

    fn is_kw(&self, k: Kw) -> bool {
        *self.tok() == Tok::Kw(k)
    }

    fn is_ident(&self) -> bool {
        matches!(self.tok(), Tok::Ident(_))
    }

    fn is_ident_named(&self, name: &str) -> bool {
        matches!(self.tok(), Tok::Ident(n) if n == name)
    }

    /// Consumes the current token (never moves past the end).
    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
            self.prev_end = t.span.end;
            match t.tok {
                Tok::P(P::LBrace) => self.braces += 1,
                Tok::P(P::RBrace) => self.braces = self.braces.saturating_sub(1),
                _ => {}
            }
        }
        t
    }

    fn eat_p(&mut self, p: P) -> bool {
        if self.is_p(p) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn eat_kw(&mut self, k: Kw) -> bool {
        if self.is_kw(k) {
            self.bump();
            true
        } else {
            false
        }
    }

    /// Consumes `p` or reports `expected 'p', found …` at the current token.
    fn expect_p(&mut self, p: P) -> PResult<Span> {
        if self.is_p(p) {
            Ok(self.bump().span)
        } else {
            self.error_here(format!(
                "expected '{}', found {}",
                p.as_str(),
                self.describe()
            ));
            Err(Failed)
        }
    }

    /// A span from `start` to the end of the last consumed token.
    fn since(&self, start: Span) -> Span {
        Span {
            file: self.file,
            start: start.start,
            end: self.prev_end.max(start.end),
        }
    }

    // ----- diagnostics -----

    fn error(&mut self, span: Span, msg: impl Into<String>) {
        self.diags.push(Diag::error(code::SYNTAX, span, msg));
    }

    fn error_here(&mut self, msg: impl Into<String>) {
        let span = self.span();
        self.error(span, msg);
    }

    fn not_implemented(&mut self, span: Span, what: &str) {
        self.diags.push(Diag::error(
            code::NOT_IMPLEMENTED,
            span,
            format!("{what} not implemented"),
        ));
    }

    /// A description of the current token for messages.
    fn describe(&self) -> String {
        describe(self.tok())
    }

    // ----- depth and backtracking -----

    /// Enters one nesting level, or reports `nesting too deep`.
    fn deeper(&mut self) -> PResult<()> {
        self.spend(LINKS_PER_LEVEL)
    }

    /// Leaves a level entered with [`Parser::deeper`].
    fn shallower(&mut self) {
        self.depth -= LINKS_PER_LEVEL;
    }

    /// Adds one link to a left-associative chain (see the module documentation).
    fn link(&mut self) -> PResult<()> {
        self.spend(1)
    }

    fn spend(&mut self, units: u32) -> PResult<()> {
        if self.depth + units > MAX_DEPTH * LINKS_PER_LEVEL {
            if !self.too_deep {
                self.too_deep = true;
                self.error_here("nesting too deep");
            }
            return Err(Failed);
        }
        self.depth += units;
        Ok(())
    }

    fn save(&self) -> Saved {
        Saved {
            pos: self.pos,
            diags: self.diags.len(),
            depth: self.depth,
            prev_end: self.prev_end,
            too_deep: self.too_deep,
            braces: self.braces,
        }
    }

    fn restore(&mut self, s: Saved) {
        self.pos = s.pos;
        self.diags.truncate(s.diags);
        self.depth = s.depth;
        self.prev_end = s.prev_end;
        self.too_deep = s.too_deep;
        self.braces = s.braces;
    }

    // ----- names -----

    /// An identifier; a reserved word here is reported as such.
    fn ident(&mut self, what: &str) -> PResult<Ident> {
        match self.tok().clone() {
            Tok::Ident(name) => {
                let span = self.bump().span;
                Ok(Ident { name, span })
            }
            Tok::Kw(k) => {
                self.error_here(format!(
                    "'{}' is a reserved word and cannot be used as {what}",
                    k.as_str()
                ));
                Err(Failed)
            }
            _ => {
                self.error_here(format!("expected {what}, found {}", self.describe()));
                Err(Failed)
            }
        }
    }

    /// `a.b.c`.
    fn qual_name(&mut self, what: &str) -> PResult<QualName> {
        let first = self.ident(what)?;
        let mut parts = vec![first];
        while self.is_p(P::Dot) && matches!(self.nth(1).tok, Tok::Ident(_)) {
            self.bump();
            parts.push(self.ident(what)?);
        }
        let span = parts[0].span.to(parts[parts.len() - 1].span);
        Ok(QualName { parts, span })
    }

    // ----- recovery -----

    /// Skips a balanced `{ … }` group starting at the current `{`.
    fn skip_braces(&mut self) {
        let mut depth = 0u32;
        loop {
            match self.tok() {
                Tok::Eof => return,
                Tok::P(P::LBrace) => depth += 1,
                Tok::P(P::RBrace) => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.bump();
                        return;
                    }
                }
                _ => {}
            }
            self.bump();
        }
    }

    /// Skips to the end of groups opened since the brace depth was `level`.
    fn close_groups(&mut self, level: u32) {
        while self.braces > level && !self.at_eof() {
            self.bump();
        }
    }

    /// Skips to the `}` that closes the block whose contents are at brace depth `level`.
    fn skip_to_block_end(&mut self, level: u32) {
        while !(self.at_eof() || (self.braces == level && self.is_p(P::RBrace))) {
            self.bump();
        }
    }

    /// After a failed statement in a block at brace depth `level`: closes any group the
    /// statement opened, then skips to just after `;`, just after a balanced block (and any
    /// `else`/`catch`/`finally` continuation), or to a `}` or statement keyword.
    fn sync_stmt(&mut self, level: u32) {
        self.close_groups(level);
        let start = self.pos;
        loop {
            match self.tok() {
                Tok::Eof | Tok::P(P::RBrace) => return,
                Tok::P(P::Semi) => {
                    self.bump();
                    return;
                }
                Tok::P(P::LBrace) => {
                    self.skip_braces();
                    if !matches!(self.tok(), Tok::Kw(Kw::Else | Kw::Catch | Kw::Finally)) {
                        return;
                    }
                }
                Tok::Kw(
                    Kw::If
                    | Kw::While
                    | Kw::For
                    | Kw::Do
                    | Kw::Return
                    | Kw::Switch
                    | Kw::Break
                    | Kw::Continue
                    | Kw::Final,
                ) if self.pos != start => return,
                _ => {
                    self.bump();
                }
            }
        }
    }

    /// After a failed member in a class body at brace depth `level`: closes any group the
    /// member opened, then skips to just after `;` or a balanced block, or to a `}` or the
    /// start of the next member.
    fn sync_member(&mut self, level: u32) {
        self.close_groups(level);
        let start = self.pos;
        loop {
            match self.tok() {
                Tok::Eof | Tok::P(P::RBrace) => return,
                Tok::P(P::Semi) => {
                    self.bump();
                    return;
                }
                Tok::P(P::LBrace) => {
                    self.skip_braces();
                    return;
                }
                Tok::P(P::At)
                | Tok::Kw(Kw::Public | Kw::Private | Kw::Protected | Kw::Static | Kw::Final)
                    if self.pos != start =>
                {
                    return
                }
                _ => {
                    self.bump();
                }
            }
        }
    }

    /// After a failed top-level item: skips to the next declaration start.
    fn sync_top(&mut self) {
        let start = self.pos;
        loop {
            match self.tok() {
                Tok::Eof => return,
                Tok::P(P::LBrace) => self.skip_braces(),
                Tok::P(P::At)
                | Tok::Kw(
                    Kw::Class
                    | Kw::Interface
                    | Kw::Enum
                    | Kw::Record
                    | Kw::Import
                    | Kw::Package
                    | Kw::Public
                    | Kw::Final
                    | Kw::Abstract,
                ) if self.pos != start => return,
                _ => {
                    self.bump();
                }
            }
        }
    }

    /// Skips a T3 declaration (nested class, enum, …): to after its balanced body or `;`.
    fn skip_decl(&mut self) {
        loop {
            match self.tok() {
                Tok::Eof | Tok::P(P::RBrace) => return,
                Tok::P(P::Semi) => {
                    self.bump();
                    return;
                }
                Tok::P(P::LBrace) => {
                    self.skip_braces();
                    return;
                }
                _ => {
                    self.bump();
                }
            }
        }
    }
}

/// A description of a token for messages.
fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(n) => format!("identifier '{n}'"),
        Tok::Kw(k) => format!("'{}'", k.as_str()),
        Tok::Int { .. } => "an integer literal".into(),
        Tok::Float { .. } => "a float literal".into(),
        Tok::Char(_) => "a character literal".into(),
        Tok::Str(_) => "a string literal".into(),
        Tok::P(p) => format!("'{}'", p.as_str()),
        Tok::Eof => "end of file".into(),
    }
}

/// Whether `e` may stand alone as an expression statement (LANGUAGE §7).
fn is_statement_expr(e: &Expr) -> bool {
    use crate::ast::UnOp;
    matches!(
        e.kind,
        ExprKind::Assign { .. }
            | ExprKind::Unary {
                op: UnOp::PreInc | UnOp::PreDec,
                ..
            }
            | ExprKind::Postfix { .. }
            | ExprKind::Call { .. }
            | ExprKind::Invoke { .. }
            | ExprKind::New { .. }
            | ExprKind::NewArray { .. }
            | ExprKind::SharedArray { .. }
    )
}

/// Whether `e` may be assigned to (LANGUAGE §8.3).
fn is_assignable(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Name(_) | ExprKind::Field { .. } | ExprKind::Index { .. }
    )
}
