//! A REPL-oriented compile API: one interactive session as an ever-growing program.
//!
//! The REPL (crate `cajeta-repl`) keeps a [`Session`]: the imports, whole classes and top-level
//! functions entered so far, plus the *session variables* (the top-level local declarations of
//! earlier entries). Every entry recompiles the whole session as one generated unit:
//!
//! ```text
//! import …;                      // every import entered so far
//! class P { … }                  // every class entered so far (a redefinition replaces)
//! public class Repl {            // the implicit session class
//!     static T x;                // one static field per session variable
//!     static … f(…) { … }        // the top-level functions (`static` added when missing)
//!     static void $run() { … }   // this entry's statements (`static T $run()` to echo a value)
//! }
//! ```
//!
//! A top-level `T x = e;` of an entry becomes the static field `x` and the statement `x = e;`,
//! so the value persists: the VM keeps statics across modules (`Vm::replace_module`).
//!
//! * [`split`] cuts an entry into items (imports, classes, functions, statements) with the
//!   lexer, and says whether the entry is unfinished (an open bracket, comment or
//!   definition, or a trailing expression whose parse stops at the end of the text): the REPL
//!   then reads a continuation line.
//! * [`Session::compile`] builds and checks the generated unit. Diagnostics are mapped back
//!   to the text the user typed ([`Segment`]s record where each piece of the generated text
//!   came from) and rendered by [`crate::driver::render`]; runtime traces are mapped with
//!   [`Compiled::remap_frame`].
//! * The echo needs the type of the trailing expression. The checker has no public "type of
//!   an expression" entry point, so it is found by compiling a probe `boolean $p = (e);`: it
//!   compiles for a `boolean`, and otherwise the checker's `cannot convert T to boolean`
//!   diagnostic (at the expression) names `T` in its Cajeta spelling; `void` shows as
//!   `CAJETA_ERROR_UNRESOLVED_EXPRESSION`.
//!
//! Architecture invariant: this module only drives the public parser/checker API; it never
//! reaches into the checker's internals.

use crate::ast::StmtKind;
use crate::diag::{code, Diag, SourceMap, Span};
use crate::lexer::{lex, Kw, Tok, Token, P};
use cajeta_bytecode::Module;

/// The implicit session class's name.
pub const SESSION_CLASS: &str = "Repl";
/// The name of the generated function that runs an entry's statements.
pub const RUN_FN: &str = "$run";
/// The file name of the generated unit (in the module's file table and runtime traces).
pub const GENERATED_FILE: &str = "<session>";

/// Text the user typed (an entry or a loaded file), named for diagnostics.
#[derive(Clone, Debug)]
pub struct Origin {
    /// The name diagnostics print (`<input>`, `<entry 3>`, a file path).
    pub label: String,
    /// The text.
    pub text: String,
    /// Which entry typed at the prompt this is (its `<entry N>` once older), counting those
    /// that failed to compile; 0 for a loaded file.
    pub entry: usize,
}

/// A byte range of an origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Index of the origin in [`Session::origins`].
    pub origin: usize,
    /// Start byte.
    pub start: u32,
    /// End byte (exclusive).
    pub end: u32,
}

/// What a top-level item of an entry is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ItemKind {
    /// `import a.b.C;` / `import a.b.*;`.
    Import,
    /// A whole class, with its name.
    Class(String),
    /// A top-level function (method of the session class), with its name and, when it lacks
    /// `static`, the byte where `static ` must be inserted.
    Function(String, Option<u32>),
    /// A statement or local declaration.
    Statement,
    /// The trailing expression (no `;`): its value is echoed.
    Expression,
}

/// One top-level item of an entry: its kind and byte range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// What it is.
    pub kind: ItemKind,
    /// Start byte.
    pub start: u32,
    /// End byte (exclusive).
    pub end: u32,
}

/// The result of [`split`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Split {
    /// The entry is unfinished: read another line.
    Incomplete,
    /// The items, in order (possibly none: only whitespace and comments).
    Items(Vec<Item>),
}

/// A session variable: a top-level local declaration of an earlier entry.
#[derive(Clone, Debug)]
pub struct Var {
    /// The name.
    pub name: String,
    /// The declared type as written.
    pub ty: Piece,
}

/// A stored definition: its key (class or function name) and text.
#[derive(Clone, Debug)]
struct Def {
    name: String,
    piece: Piece,
    /// For functions: where to insert `static `.
    insert_static: Option<u32>,
}

/// The state of an interactive session: what every entry recompiles.
#[derive(Clone, Debug, Default)]
pub struct Session {
    /// Every text ever entered (indices are stable).
    pub origins: Vec<Origin>,
    imports: Vec<Piece>,
    classes: Vec<Def>,
    functions: Vec<Def>,
    /// The session variables, in declaration order.
    pub vars: Vec<Var>,
    /// Entries typed at the prompt so far, accepted or not.
    typed: usize,
}

/// Maps a range of the generated text back to an origin.
#[derive(Clone, Copy, Debug)]
pub struct Segment {
    /// Start in the generated text.
    pub gen_start: u32,
    /// The origin range it copies.
    pub piece: Piece,
}

/// How an entry's value is shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Echo {
    /// Nothing to show (statements, definitions, a `void` call).
    None,
    /// `$run` returns the trailing expression's value, of this type (Cajeta spelling).
    Value(String),
    /// The trailing expression is `null`.
    Null,
}

/// A successfully compiled entry.
pub struct Compiled {
    /// The module of the whole session.
    pub module: Module,
    /// The function running the entry (`Repl.$run`), if the entry has statements.
    pub run: Option<u32>,
    /// What to show after running.
    pub echo: Echo,
    /// The session after the entry (commit it with [`Session::clone_from`] once accepted).
    pub session: Session,
    /// Classes the entry defined (their static initialisers must run).
    pub new_classes: Vec<String>,
    /// Session variables the entry declared again (their old values must be released).
    pub redeclared: Vec<String>,
    gen: Generated,
}

impl Compiled {
    /// Maps a runtime trace position in [`GENERATED_FILE`] (`line`, `col`, both 1-based) back
    /// to `(label, line, col)` of the text the user typed; `None` for generated glue.
    pub fn remap_frame(&self, line: u32, col: u32) -> Option<(String, u32, u32)> {
        self.remap(line, col, false)
    }

    /// As [`Compiled::remap_frame`], for code that runs after this entry's turn (a drop at
    /// the session's end, of a redeclared variable, `:drop`): this entry is `<entry N>`
    /// then, not `<input>`.
    pub fn remap_frame_later(&self, line: u32, col: u32) -> Option<(String, u32, u32)> {
        self.remap(line, col, true)
    }

    fn remap(&self, line: u32, col: u32, later: bool) -> Option<(String, u32, u32)> {
        let off = offset_of(&self.gen.text, line, col)?;
        let (origin, at) = self.gen.locate(off)?;
        let o = &self.session.origins[origin];
        let (l, c) = crate::diag::SourceFile::new(o.label.clone(), o.text.clone()).line_col(at);
        let label = if later && o.label == INPUT_LABEL {
            format!("<entry {}>", o.entry)
        } else {
            o.label.clone()
        };
        Some((label, l, c))
    }

    /// The generated unit's text (for debugging).
    pub fn generated_text(&self) -> &str {
        &self.gen.text
    }
}

/// The generated unit and its segment map.
#[derive(Clone, Debug, Default)]
struct Generated {
    text: String,
    segments: Vec<Segment>,
}

impl Generated {
    fn glue(&mut self, s: &str) {
        self.text.push_str(s);
    }

    fn copy(&mut self, origins: &[Origin], piece: Piece) {
        let text = &origins[piece.origin].text;
        if let Some(s) = text.get(piece.start as usize..piece.end as usize) {
            self.segments.push(Segment {
                gen_start: self.text.len() as u32,
                piece,
            });
            self.text.push_str(s);
        }
    }

    /// The origin and origin offset of generated offset `off`.
    fn locate(&self, off: u32) -> Option<(usize, u32)> {
        let i = self.segments.partition_point(|s| s.gen_start <= off);
        let seg = self.segments.get(i.checked_sub(1)?)?;
        let rel = off - seg.gen_start;
        let len = seg.piece.end - seg.piece.start;
        // The end of a segment still belongs to it (an error "at the end of the input").
        (rel <= len).then_some((seg.piece.origin, seg.piece.start + rel))
    }
}

/// The byte offset of 1-based (`line`, `col`) (col in code points) in `text`.
fn offset_of(text: &str, line: u32, col: u32) -> Option<u32> {
    let mut start = 0usize;
    for _ in 1..line {
        start += text.get(start..)?.find('\n')? + 1;
    }
    let rest = text.get(start..)?;
    let mut off = start;
    for (i, (b, _)) in rest.char_indices().enumerate() {
        if i + 1 == col as usize {
            return Some(b as u32 + start as u32);
        }
        off = start + b;
    }
    Some(off as u32)
}

// ----- splitting -----

fn is_p(t: &Token, p: P) -> bool {
    t.tok == Tok::P(p)
}

fn is_kw(t: &Token, k: Kw) -> bool {
    t.tok == Tok::Kw(k)
}

/// Skips a balanced group opening at `i` (`(`, `[` or `{`); returns the index after its
/// closer, or `None` at the end of the text.
fn skip_group(toks: &[Token], mut i: usize) -> Option<usize> {
    let mut depth = 0i32;
    while i < toks.len() {
        match &toks[i].tok {
            Tok::Eof => return None,
            Tok::P(P::LParen | P::LBracket | P::LBrace) => depth += 1,
            Tok::P(P::RParen | P::RBracket | P::RBrace) => {
                depth -= 1;
                if depth <= 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Skips annotations `@a.b(…)` from `i`.
fn skip_annotations(toks: &[Token], mut i: usize) -> Option<usize> {
    while is_p(&toks[i], P::At) {
        i += 1;
        while matches!(toks[i].tok, Tok::Ident(_)) {
            i += 1;
            if is_p(&toks[i], P::Dot) && matches!(toks[i + 1].tok, Tok::Ident(_)) {
                i += 1;
            } else {
                break;
            }
        }
        if is_p(&toks[i], P::LParen) {
            i = skip_group(toks, i)?;
        }
    }
    Some(i)
}

/// Skips a type (`void`, a primitive, `a.B<…>`, then `[]` pairs) from `i`; `None` if there
/// is none.
fn skip_type(toks: &[Token], mut i: usize) -> Option<usize> {
    if is_p(&toks[i], P::Hash) {
        i += 1;
    }
    match &toks[i].tok {
        Tok::Kw(k) if *k == Kw::Void || k.prim().is_some() => i += 1,
        Tok::Ident(_) => {
            i += 1;
            while is_p(&toks[i], P::Dot) && matches!(toks[i + 1].tok, Tok::Ident(_)) {
                i += 2;
            }
            if is_p(&toks[i], P::Lt) {
                let mut depth = 0;
                loop {
                    match &toks[i].tok {
                        Tok::P(P::Lt) => depth += 1,
                        Tok::P(P::Gt) => {
                            depth -= 1;
                            if depth == 0 {
                                i += 1;
                                break;
                            }
                        }
                        Tok::Eof | Tok::P(P::Semi | P::LBrace | P::RBrace) => return None,
                        _ => {}
                    }
                    i += 1;
                }
            }
        }
        _ => return None,
    }
    while is_p(&toks[i], P::LBracket) && is_p(&toks[i + 1], P::RBracket) {
        i += 2;
    }
    Some(i)
}

/// Tokens after which an expression cannot end (the entry continues on the next line).
fn continues_after(t: &Tok) -> bool {
    matches!(
        t,
        Tok::P(
            P::Dot
                | P::Comma
                | P::Assign
                | P::HashEq
                | P::Hash
                | P::Question
                | P::Colon
                | P::Arrow
                | P::EqEq
                | P::Ne
                | P::Lt
                | P::Le
                | P::Gt
                | P::Ge
                | P::Bang
                | P::Tilde
                | P::AndAnd
                | P::OrOr
                | P::Plus
                | P::Minus
                | P::Star
                | P::Slash
                | P::Percent
                | P::Amp
                | P::Pipe
                | P::Caret
                | P::PlusEq
                | P::MinusEq
                | P::StarEq
                | P::SlashEq
                | P::PercentEq
                | P::AmpEq
                | P::PipeEq
                | P::CaretEq
                | P::ShlEq
                | P::ShrEq
                | P::UshrEq
                | P::At
        ) | Tok::Kw(Kw::Else | Kw::Do)
    )
}

/// Cuts an entry into top-level items, or says it is unfinished.
///
/// An entry is unfinished when a bracket or block comment is still open, a definition has no
/// body yet, a compound statement (`if`, `while`, `for`, `switch`, a block) has not ended,
/// or the trailing expression ends with an operator or fails to parse only at its end.
/// Anything else is complete, even if wrong: compiling it reports the error.
pub fn split(text: &str) -> Split {
    let (mut toks, diags) = lex(0, text);
    pad(&mut toks);
    if diags.iter().any(|d| d.message == "unterminated comment") {
        return Split::Incomplete;
    }
    let mut items = vec![];
    let mut i = 0;
    while !matches!(toks[i].tok, Tok::Eof) {
        let start = i;
        // A file's `package` declaration (`:load` of a program's file): the session is one
        // package of its own, so it is read and left out.
        if i == 0 && is_kw(&toks[i], Kw::Package) {
            while !is_p(&toks[i], P::Semi) {
                if matches!(toks[i].tok, Tok::Eof) {
                    return Split::Incomplete;
                }
                i += 1;
            }
            i += 1;
            continue;
        }
        if is_kw(&toks[i], Kw::Import) {
            let mut j = i;
            while !is_p(&toks[j], P::Semi) {
                if matches!(toks[j].tok, Tok::Eof) {
                    return Split::Incomplete;
                }
                j += 1;
            }
            items.push(item(&toks, ItemKind::Import, start, j + 1));
            i = j + 1;
            continue;
        }
        let Some(mut j) = skip_annotations(&toks, i) else {
            return Split::Incomplete;
        };
        let annotated = j > i;
        let mut is_static = false;
        while let Tok::Kw(
            k @ (Kw::Public
            | Kw::Private
            | Kw::Protected
            | Kw::Static
            | Kw::Final
            | Kw::Abstract
            | Kw::Sealed
            | Kw::Strictfp),
        ) = toks[j].tok
        {
            is_static |= k == Kw::Static;
            j += 1;
        }
        let modified = j > i;
        if let Tok::Kw(Kw::Class | Kw::Interface | Kw::Enum | Kw::Record) = toks[j].tok {
            let name = match &toks[j + 1].tok {
                Tok::Ident(n) => n.clone(),
                _ => String::new(),
            };
            let mut k = j;
            while !is_p(&toks[k], P::LBrace) {
                if matches!(toks[k].tok, Tok::Eof) {
                    return Split::Incomplete;
                }
                k += 1;
            }
            let Some(end) = skip_group(&toks, k) else {
                return Split::Incomplete;
            };
            items.push(item(&toks, ItemKind::Class(name), start, end));
            i = end;
            continue;
        }
        // `Type name (` starts a function; a statement never does.
        if let Some(k) = skip_type(&toks, j) {
            if let (Tok::Ident(name), true) = (&toks[k].tok, is_p(&toks[k + 1], P::LParen)) {
                let Some(after_params) = skip_group(&toks, k + 1) else {
                    return Split::Incomplete;
                };
                let mut b = after_params;
                while !is_p(&toks[b], P::LBrace) {
                    if matches!(toks[b].tok, Tok::Eof) {
                        return Split::Incomplete;
                    }
                    if is_p(&toks[b], P::Semi) {
                        break;
                    }
                    b += 1;
                }
                let end = if is_p(&toks[b], P::Semi) {
                    b + 1
                } else {
                    match skip_group(&toks, b) {
                        Some(e) => e,
                        None => return Split::Incomplete,
                    }
                };
                let insert = (!is_static).then(|| {
                    // After the annotations, before any modifier: `@Kernel static void k(…)`.
                    toks[j.min(first_modifier(&toks, i, j))].span.start
                });
                items.push(item(
                    &toks,
                    ItemKind::Function(name.clone(), insert),
                    start,
                    end,
                ));
                i = end;
                continue;
            }
        }
        if (annotated || modified) && at_end_after(&toks, j) {
            return Split::Incomplete;
        }
        // A statement: to its `;` at depth 0, or the `}` ending a compound statement.
        let compound = matches!(
            toks[i].tok,
            Tok::P(P::LBrace) | Tok::Kw(Kw::If | Kw::While | Kw::For | Kw::Switch)
        ) || (matches!(toks[i].tok, Tok::Ident(_)) && is_p(&toks[i + 1], P::Colon));
        let mut depth = 0i32;
        let mut k = i;
        let end = loop {
            match &toks[k].tok {
                Tok::Eof => {
                    if depth > 0 || compound {
                        return Split::Incomplete;
                    }
                    // A trailing expression (or a statement missing its `;`).
                    if k > i && continues_after(&toks[k - 1].tok) {
                        return Split::Incomplete;
                    }
                    if is_kw(&toks[i], Kw::Do) {
                        return Split::Incomplete;
                    }
                    if expression_unfinished(text, toks[i].span.start) {
                        return Split::Incomplete;
                    }
                    items.push(item(&toks, ItemKind::Expression, i, k));
                    return Split::Items(items);
                }
                Tok::P(P::LParen | P::LBracket | P::LBrace) => depth += 1,
                Tok::P(P::RParen | P::RBracket) => depth -= 1,
                Tok::P(P::RBrace) => {
                    depth -= 1;
                    if depth <= 0 && compound && !is_kw(&toks[k + 1], Kw::Else) {
                        break k + 1;
                    }
                }
                Tok::P(P::Semi) if depth <= 0 && !(compound && is_kw(&toks[k + 1], Kw::Else)) => {
                    break k + 1;
                }
                _ => {}
            }
            k += 1;
        };
        items.push(item(&toks, ItemKind::Statement, i, end));
        i = end;
    }
    Split::Items(items)
}

/// The index of the first modifier keyword in `i..j`, or `j`.
fn first_modifier(toks: &[Token], i: usize, j: usize) -> usize {
    (i..j)
        .find(|&k| matches!(toks[k].tok, Tok::Kw(_)) && !is_p(&toks[k], P::At))
        .filter(|&k| {
            // Keywords inside annotation arguments do not count: only those after the last
            // annotation.
            skip_annotations(toks, i).is_some_and(|a| k >= a)
        })
        .unwrap_or(j)
}

/// True if only the end of the text follows index `j` (within a definition's header).
fn at_end_after(toks: &[Token], j: usize) -> bool {
    let mut k = j;
    while !matches!(toks[k].tok, Tok::Eof) {
        if matches!(toks[k].tok, Tok::P(P::Semi | P::LBrace | P::RBrace)) {
            return false;
        }
        k += 1;
    }
    true
}

/// Repeats the final [`Tok::Eof`] so that the scanners may look two tokens ahead anywhere.
fn pad(toks: &mut Vec<Token>) {
    if let Some(last) = toks.last().cloned() {
        toks.extend([last.clone(), last.clone(), last]);
    }
}

fn item(toks: &[Token], kind: ItemKind, from: usize, to: usize) -> Item {
    Item {
        kind,
        start: toks[from].span.start,
        end: toks[to.max(from + 1) - 1].span.end,
    }
}

/// Whether the trailing expression starting at `start` parses only up to the end of the text
/// (the parser stopped there, wanting more).
fn expression_unfinished(text: &str, start: u32) -> bool {
    let expr = &text[start as usize..];
    let prefix = "class $V { static void $m() { boolean $p = (\n";
    let wrapped = format!("{prefix}{expr}\n); }} }}");
    let (_, diags) = crate::parser::parse(0, &wrapped);
    let user_end = (prefix.len() + expr.len()) as u32;
    // Unfinished if the first error is past the user's text, but only when the text looked
    // like an expression (a declaration missing `;` is complete: `;` is added).
    diags
        .first()
        .and_then(|d| d.span)
        .is_some_and(|s| s.start > user_end)
        && !looks_like_declaration(expr)
}

/// Names the generated session uses: its class and `$`-names (`$run`, `$probe`, owns-flags).
fn is_reserved(name: &str) -> bool {
    name == SESSION_CLASS || name.starts_with('$')
}

/// `Type name` at the start: a local declaration, never an expression.
fn looks_like_declaration(text: &str) -> bool {
    let (mut toks, _) = lex(0, text);
    pad(&mut toks);
    let mut i = 0;
    if is_kw(&toks[0], Kw::Final) {
        i = 1;
    }
    skip_type(&toks, i).is_some_and(|k| matches!(toks[k].tok, Tok::Ident(_)))
}

// ----- compiling -----

/// The label of the entry being compiled; older entries are renamed `<entry N>`.
pub const INPUT_LABEL: &str = "<input>";

/// The Cajeta spelling of a type as the checker prints it, qualified where the library name
/// would need an import (the generated `$run` must not depend on the user's imports).
fn qualified_type(t: &str) -> String {
    const XPU: [&str; 5] = [
        "KernelBuffer",
        "KernelStream",
        "MemoryKind",
        "MemoryOrder",
        "Event",
    ];
    for name in XPU {
        if t.starts_with(name)
            && !t[name.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
        {
            return format!("cajeta.xpu.{t}");
        }
    }
    t.to_string()
}

/// Where the probe or the trailing expression sits in the generated text.
struct Layout {
    gen: Generated,
    /// Generated offset of the trailing expression, if any.
    expr_at: Option<u32>,
}

/// Reads the probe's verdict from the diagnostics of a probe compile: the expression's type
/// (`boolean` when it compiled, `void` for a void call) and the other diagnostics.
fn probe_result(errors: Vec<Diag>, at: Option<u32>) -> (String, Vec<Diag>) {
    let mut ty = "boolean".to_string();
    let mut rest = vec![];
    for d in errors {
        let here = d.span.map(|s| s.start) == at;
        if here && d.code == code::TYPE_MISMATCH {
            if let Some(t) = d
                .message
                .strip_prefix("cannot convert ")
                .and_then(|m| m.strip_suffix(" to boolean"))
            {
                ty = t.to_string();
                continue;
            }
        }
        if here && d.code == code::UNRESOLVED_EXPRESSION {
            ty = "void".to_string();
            continue;
        }
        rest.push(d);
    }
    (ty, rest)
}

impl Session {
    /// An empty session.
    pub fn new() -> Session {
        Session::default()
    }

    /// The names of the session variables, functions and classes (for completion).
    pub fn names(&self) -> Vec<String> {
        let mut out: Vec<String> = self.vars.iter().map(|v| v.name.clone()).collect();
        out.extend(self.functions.iter().map(|d| d.name.clone()));
        out.extend(self.classes.iter().map(|d| d.name.clone()));
        out
    }

    /// The type of session variable `name` as written, if it exists.
    pub fn var_type(&self, name: &str) -> Option<String> {
        let v = self.vars.iter().find(|v| v.name == name)?;
        let o = &self.origins[v.ty.origin];
        o.text
            .get(v.ty.start as usize..v.ty.end as usize)
            .map(str::to_string)
    }

    /// Removes session variable `name` (`:drop`); false if there is none.
    pub fn remove_var(&mut self, name: &str) -> bool {
        let before = self.vars.len();
        self.vars.retain(|v| v.name != name);
        self.vars.len() != before
    }

    /// Counts an entry typed at the prompt that did not compile, so that later entries keep
    /// the numbers the user counts (`<entry N>` is the N-th entry typed).
    pub fn count_failed_entry(&mut self) {
        self.typed += 1;
    }

    /// Whether a function or kernel of this name was defined at the prompt.
    pub fn has_function(&self, name: &str) -> bool {
        self.functions.iter().any(|d| d.name == name)
    }

    /// Compiles entry `text` (already [`split`] into `items`) against the session, named
    /// `label` in diagnostics. Nothing changes in `self`: the returned [`Compiled`] carries the
    /// session after the entry.
    ///
    /// # Errors
    ///
    /// The rendered diagnostics (LANGUAGE §10.1 format, positions in the text the user typed).
    pub fn compile(&self, text: &str, label: &str, items: &[Item]) -> Result<Compiled, String> {
        let mut next = self.clone();
        for o in &mut next.origins {
            if o.label == INPUT_LABEL {
                o.label = format!("<entry {}>", o.entry);
            }
        }
        let entry = if label == INPUT_LABEL {
            next.typed += 1;
            next.typed
        } else {
            0
        };
        let origin = next.origins.len();
        next.origins.push(Origin {
            label: label.to_string(),
            text: text.to_string(),
            entry,
        });
        let piece = |start: u32, end: u32| Piece { origin, start, end };
        let mut new_classes = vec![];
        let mut redeclared = vec![];
        // The body of `$run`: pieces of the entry, and glue.
        let mut body: Vec<Result<Piece, String>> = vec![];
        let mut expr: Option<Piece> = None;
        for it in items {
            match &it.kind {
                ItemKind::Import => {
                    let p = piece(it.start, it.end);
                    let t = &text[it.start as usize..it.end as usize];
                    if !next.imports.iter().any(|q| next.piece_text(*q) == t) {
                        next.imports.push(p);
                    }
                }
                ItemKind::Class(name) => {
                    next.check_name(origin, it, name)?;
                    let def = Def {
                        name: name.clone(),
                        piece: piece(it.start, it.end),
                        insert_static: None,
                    };
                    match next.classes.iter_mut().find(|d| d.name == *name) {
                        Some(d) => *d = def,
                        None => next.classes.push(def),
                    }
                    new_classes.push(name.clone());
                }
                ItemKind::Function(name, insert) => {
                    next.check_name(origin, it, name)?;
                    next.functions.retain(|d| d.name != *name);
                    next.functions.push(Def {
                        name: name.clone(),
                        piece: piece(it.start, it.end),
                        insert_static: *insert,
                    });
                }
                ItemKind::Expression
                    if !looks_like_declaration(&text[it.start as usize..it.end as usize]) =>
                {
                    expr = Some(piece(it.start, it.end));
                }
                ItemKind::Statement | ItemKind::Expression => {
                    let missing_semi = it.kind == ItemKind::Expression;
                    next.statement(origin, it, missing_semi, &mut body, &mut redeclared)?;
                    body.push(Err(if missing_semi { ";\n" } else { "\n" }.into()));
                }
            }
        }
        let has_run = expr.is_some() || !body.is_empty();
        let mut echo = Echo::None;
        let mut ret: Option<String> = None;
        if let Some(e) = expr {
            // Probe the expression's type.
            let layout = next.generate(&body, has_run, Some(e), None, true);
            let c = crate::driver::compile_sources(vec![(
                GENERATED_FILE.to_string(),
                layout.gen.text.clone().into_bytes(),
            )]);
            let (ty, rest) = probe_result(c.errors, layout.expr_at);
            if !rest.is_empty() {
                return Err(next.render(&layout.gen, &rest));
            }
            match ty.as_str() {
                "void" => {
                    body.push(Ok(e));
                    body.push(Err(";\n".into()));
                }
                "null" => echo = Echo::Null,
                t => {
                    echo = Echo::Value(t.to_string());
                    ret = Some(qualified_type(t));
                }
            }
        }
        let run_expr = if ret.is_some() { expr } else { None };
        let layout = next.generate(&body, has_run, run_expr, ret.as_deref(), false);
        let c = crate::driver::compile_sources(vec![(
            GENERATED_FILE.to_string(),
            layout.gen.text.clone().into_bytes(),
        )]);
        if !c.errors.is_empty() {
            return Err(next.render(&layout.gen, &c.errors));
        }
        let Some(module) = c.module else {
            return Err("cajeta: error: the session did not compile\n".into());
        };
        let run = module.function_by_name(&format!("{SESSION_CLASS}.{RUN_FN}"));
        Ok(Compiled {
            module,
            run: if has_run { run } else { None },
            echo,
            session: next,
            new_classes,
            redeclared,
            gen: layout.gen,
        })
    }

    /// The type of expression `text` (`:type`), in its Cajeta spelling (`void` for a `void`
    /// call).
    ///
    /// # Errors
    ///
    /// The rendered diagnostics when the expression does not compile.
    pub fn type_of(&self, text: &str) -> Result<String, String> {
        let mut next = self.clone();
        let origin = next.origins.len();
        next.origins.push(Origin {
            label: INPUT_LABEL.to_string(),
            text: text.to_string(),
            entry: 0,
        });
        let trimmed_start = (text.len() - text.trim_start().len()) as u32;
        let e = Piece {
            origin,
            start: trimmed_start,
            end: text.trim_end().len() as u32,
        };
        let layout = next.generate(&[], false, Some(e), None, true);
        let c = crate::driver::compile_sources(vec![(
            GENERATED_FILE.to_string(),
            layout.gen.text.clone().into_bytes(),
        )]);
        let (ty, rest) = probe_result(c.errors, layout.expr_at);
        if rest.is_empty() {
            Ok(ty)
        } else {
            Err(next.render(&layout.gen, &rest))
        }
    }

    fn piece_text(&self, p: Piece) -> &str {
        self.origins[p.origin]
            .text
            .get(p.start as usize..p.end as usize)
            .unwrap_or("")
    }

    /// Adds one statement item to `$run`'s body: a top-level local declaration becomes session
    /// variables and assignments; anything else is copied.
    fn statement(
        &mut self,
        origin: usize,
        it: &Item,
        missing_semi: bool,
        body: &mut Vec<Result<Piece, String>>,
        redeclared: &mut Vec<String>,
    ) -> Result<(), String> {
        let text = &self.origins[origin].text[it.start as usize..it.end as usize];
        let prefix = "class $V { static void $m() {\n";
        // A declaration typed without its final `;` is a declaration too.
        let semi = if missing_semi { ";" } else { "" };
        let wrapped = format!("{prefix}{text}{semi}\n}} }}");
        let (unit, diags) = crate::parser::parse(0, &wrapped);
        let whole = Piece {
            origin,
            start: it.start,
            end: it.end,
        };
        let local = (diags.is_empty())
            .then(|| unit.classes.first())
            .flatten()
            .and_then(|c| c.members.first())
            .and_then(|m| match m {
                crate::ast::Member::Method(md) => md.body.stmts.first().cloned(),
                _ => None,
            });
        let Some(crate::ast::Stmt {
            kind: StmtKind::Local(decl),
            ..
        }) = local
        else {
            body.push(Ok(whole));
            return Ok(());
        };
        // Offsets in `wrapped` → offsets in the origin.
        let shift = |s: Span| Piece {
            origin,
            start: s.start - prefix.len() as u32 + it.start,
            end: s.end - prefix.len() as u32 + it.start,
        };
        let ty = shift(decl.ty.span);
        for d in &decl.vars {
            let name = d.name.name.clone();
            if is_reserved(&name) {
                let at = shift(d.name.span);
                return Err(self.reserved_error(origin, at.start, at.end, &name));
            }
            match self.vars.iter_mut().find(|v| v.name == name) {
                Some(v) => {
                    v.ty = ty;
                    redeclared.push(name.clone());
                }
                None => self.vars.push(Var {
                    name: name.clone(),
                    ty,
                }),
            }
            if let Some(init) = &d.init {
                body.push(Ok(shift(d.name.span)));
                body.push(Err(if d.transfer { " #= " } else { " = " }.into()));
                body.push(Ok(shift(init.span)));
                body.push(Err(";".into()));
            }
        }
        Ok(())
    }

    /// Refuses a class or function named like the session's own (see [`is_reserved`]).
    fn check_name(&self, origin: usize, it: &Item, name: &str) -> Result<(), String> {
        if !is_reserved(name) {
            return Ok(());
        }
        let text = &self.origins[origin].text[it.start as usize..it.end as usize];
        let at = it.start + text.find(name).unwrap_or(0) as u32;
        Err(self.reserved_error(origin, at, at + name.len() as u32, name))
    }

    /// The diagnostic for reserved name `name` at `start..end` of entry `origin`.
    fn reserved_error(&self, origin: usize, start: u32, end: u32, name: &str) -> String {
        let o = &self.origins[origin];
        let mut map = SourceMap::default();
        let file = map.add(o.label.clone(), o.text.clone());
        let d = Diag::error(
            code::SYNTAX,
            Span { file, start, end },
            format!("'{name}' is reserved in the REPL (the session class `{SESSION_CLASS}` and names starting with `$`)"),
        );
        crate::driver::render(&map, &d)
    }

    /// Generates the session unit. With `probe`, `expr` goes into `$probe` as
    /// `boolean $p = (e);`; otherwise, with `ret`, `$run` returns it.
    fn generate(
        &self,
        body: &[Result<Piece, String>],
        has_run: bool,
        expr: Option<Piece>,
        ret: Option<&str>,
        probe: bool,
    ) -> Layout {
        let o = &self.origins;
        let mut g = Generated::default();
        for p in &self.imports {
            g.copy(o, *p);
            g.glue("\n");
        }
        for d in &self.classes {
            g.copy(o, d.piece);
            g.glue("\n");
        }
        g.glue(&format!("public class {SESSION_CLASS} {{\n"));
        for v in &self.vars {
            g.glue("static ");
            g.copy(o, v.ty);
            g.glue(&format!(" {};\n", v.name));
        }
        for d in &self.functions {
            match d.insert_static {
                Some(at) if at >= d.piece.start && at <= d.piece.end => {
                    g.copy(o, Piece { end: at, ..d.piece });
                    g.glue("static ");
                    g.copy(
                        o,
                        Piece {
                            start: at,
                            ..d.piece
                        },
                    );
                }
                _ => g.copy(o, d.piece),
            }
            g.glue("\n");
        }
        let mut expr_at = None;
        if has_run {
            let r = match (ret, probe) {
                (Some(t), false) => t.to_string(),
                _ => "void".to_string(),
            };
            g.glue(&format!("static {r} {RUN_FN}() {{\n"));
            for p in body {
                match p {
                    Ok(p) => g.copy(o, *p),
                    Err(s) => g.glue(s),
                }
            }
            if let (Some(e), Some(_), false) = (expr, ret, probe) {
                g.glue("return\n");
                expr_at = Some(g.text.len() as u32);
                g.copy(o, e);
                g.glue("\n;\n");
            }
            g.glue("}\n");
        }
        if let (Some(e), true) = (expr, probe) {
            g.glue("static void $probe() { boolean $p =\n");
            expr_at = Some(g.text.len() as u32);
            g.copy(o, e);
            g.glue("\n; }\n");
        }
        g.glue("}\n");
        Layout { gen: g, expr_at }
    }

    /// Renders diagnostics of the generated unit at their positions in the user's text. One
    /// that falls in the generated glue (a consequence of an error in the entry: the session
    /// class no longer closes, say) is left out when another one points into the entry.
    fn render(&self, gen: &Generated, diags: &[Diag]) -> String {
        let mut out = String::new();
        let in_entry = |d: &Diag| d.span.is_some_and(|s| gen.locate(s.start).is_some());
        let any_in_entry = diags.iter().any(in_entry);
        for d in diags {
            if any_in_entry && !in_entry(d) {
                continue;
            }
            let mapped = d.span.and_then(|s| {
                let (origin, start) = gen.locate(s.start)?;
                let end = match gen.locate(s.end.max(s.start)) {
                    Some((o, e)) if o == origin && e >= start => e,
                    _ => start,
                };
                Some((origin, start, end))
            });
            match mapped {
                Some((origin, start, end)) => {
                    let o = &self.origins[origin];
                    let mut map = SourceMap::default();
                    let file = map.add(o.label.clone(), o.text.clone());
                    let d = Diag {
                        span: Some(Span { file, start, end }),
                        ..d.clone()
                    };
                    out.push_str(&crate::driver::render(&map, &d));
                }
                None => out.push_str(&crate::driver::render(
                    &SourceMap::default(),
                    &Diag {
                        span: None,
                        ..d.clone()
                    },
                )),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Option<Vec<ItemKind>> {
        match split(text) {
            Split::Incomplete => None,
            Split::Items(items) => Some(items.into_iter().map(|i| i.kind).collect()),
        }
    }

    /// Splits and compiles `text` against `s`, committing the session on success.
    fn enter(s: &mut Session, text: &str) -> Result<Compiled, String> {
        let Split::Items(items) = split(text) else {
            return Err("incomplete".into());
        };
        let c = s.compile(text, INPUT_LABEL, &items)?;
        *s = c.session.clone();
        Ok(c)
    }

    #[test]
    fn unfinished_entries_continue() {
        for text in [
            "@Kernel",
            "@Kernel\nvoid k(KernelBuffer<float32> y,",
            "void f() {",
            "class P {",
            "int32 x = 1 +",
            "if (x > 0)",
            "for (int32 i = 0; i < 3; i++) {",
            "/* comment",
            "x.",
            "do { x++; }",
            "import cajeta.xpu",
        ] {
            assert_eq!(split(text), Split::Incomplete, "{text:?}");
        }
    }

    #[test]
    fn items_are_classified() {
        use ItemKind::*;
        assert_eq!(
            kinds("import cajeta.xpu.*; int32 x = 1; x + 1"),
            Some(vec![Import, Statement, Expression])
        );
        assert_eq!(
            kinds("@Kernel void k(KernelBuffer<float32> y) { }\nclass P { int32 a; }"),
            Some(vec![Function("k".into(), Some(8)), Class("P".into())])
        );
        assert_eq!(
            kinds("static int32 f() { return 1; }"),
            Some(vec![Function("f".into(), None)])
        );
        assert_eq!(
            kinds("if (a) { b(); } else { c(); } d();"),
            Some(vec![Statement, Statement])
        );
        assert_eq!(kinds("  // nothing\n"), Some(vec![]));
        // A statement missing its `;` and a malformed entry are complete (compiling reports).
        assert_eq!(kinds("int32 x = 5"), Some(vec![Expression]));
        assert_eq!(kinds("int32 = ;"), Some(vec![Statement]));
    }

    #[test]
    fn echo_types_come_from_the_checker() {
        let mut s = Session::new();
        enter(&mut s, "import cajeta.xpu.*; uint32 u = 42;").unwrap();
        let c = enter(&mut s, "u").unwrap();
        assert_eq!(c.echo, Echo::Value("uint32".into()));
        let c = enter(&mut s, "u * 2.5").unwrap();
        assert_eq!(c.echo, Echo::Value("float64".into()));
        let c = enter(&mut s, "heap KernelBuffer<int16>(3)").unwrap();
        assert_eq!(c.echo, Echo::Value("KernelBuffer<int16>".into()));
        let c = enter(&mut s, "System.stdout.println(u)").unwrap();
        assert_eq!(c.echo, Echo::None);
        assert!(c.run.is_some());
        assert_eq!(s.type_of("u > 1").unwrap(), "boolean");
        assert_eq!(s.type_of("null").unwrap(), "null");
    }

    #[test]
    fn variables_persist_as_statics_and_redeclarations_are_reported() {
        let mut s = Session::new();
        enter(&mut s, "int32 a = 1, b;").unwrap();
        let c = enter(&mut s, "int64 a = 2;").unwrap();
        assert_eq!(c.redeclared, vec!["a".to_string()]);
        assert_eq!(s.var_type("a").as_deref(), Some("int64"));
        assert_eq!(s.var_type("b").as_deref(), Some("int32"));
        let statics: Vec<_> = c.module.statics.iter().map(|s| s.name.clone()).collect();
        assert_eq!(statics, ["Repl.a", "Repl.b"]);
    }

    #[test]
    fn diagnostics_point_into_the_typed_text() {
        let mut s = Session::new();
        enter(&mut s, "int32 f(int32 v) {\n    return v;\n}").unwrap();
        let err = enter(&mut s, "int32 y = 1;\ny = f(true);").err().unwrap();
        assert!(err.starts_with("<input>:2:"), "{err}");
        assert!(err.contains("\n 2 | y = f(true);\n"), "{err}");
        // A failed entry changes nothing.
        assert!(s.var_type("y").is_none());
        // Redefining `f` breaks nothing else; an error in it names the entry as typed.
        let err = enter(&mut s, "int32 f(int32 v) {\n    return w;\n}")
            .err()
            .unwrap();
        assert!(
            err.starts_with("<input>:2:12: error[CAJETA_ERROR_VARIABLE_NOT_FOUND]"),
            "{err}"
        );
    }
}
