//! The syntax tree produced by the parser and consumed by the checker/lowering.
//!
//! The tree is purely syntactic: names are unresolved and no types are attached. Every node
//! carries a [`Span`] (the construct's first character is `span.start`, which is where
//! diagnostics point).

use crate::diag::{FileId, Span};

/// An identifier with its position.
#[derive(Clone, PartialEq, Debug)]
pub struct Ident {
    /// The name.
    pub name: String,
    /// Where it is.
    pub span: Span,
}

/// A dotted name `a.b.c` (at least one part).
#[derive(Clone, PartialEq, Debug)]
pub struct QualName {
    /// The parts in order.
    pub parts: Vec<Ident>,
    /// The whole name.
    pub span: Span,
}

impl QualName {
    /// `a.b.c` as one string.
    pub fn joined(&self) -> String {
        self.parts
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(".")
    }
}

/// One source file.
#[derive(Clone, PartialEq, Debug)]
pub struct Unit {
    /// The file.
    pub file: FileId,
    /// `package a.b;`, if present.
    pub package: Option<QualName>,
    /// Annotations before `package` (§5.1; none is known, so each is warned about).
    pub package_annotations: Vec<Annotation>,
    /// Imports in order.
    pub imports: Vec<Import>,
    /// Top-level classes in order.
    pub classes: Vec<ClassDecl>,
}

/// `import a.b.C;` or `import a.b.*;`.
#[derive(Clone, PartialEq, Debug)]
pub struct Import {
    /// The imported name (without `.*`).
    pub path: QualName,
    /// True for `.*`.
    pub wildcard: bool,
    /// The whole declaration.
    pub span: Span,
}

/// `@Name` or `@Name(args)`.
#[derive(Clone, PartialEq, Debug)]
pub struct Annotation {
    /// The annotation's name (`Kernel`, `Wave`, …).
    pub name: QualName,
    /// Arguments; one unnamed value means `value=`.
    pub args: Vec<AnnotationArg>,
    /// The whole annotation.
    pub span: Span,
}

/// One annotation argument `name = value`, `name: value` or a bare value.
#[derive(Clone, PartialEq, Debug)]
pub struct AnnotationArg {
    /// The name, if given.
    pub name: Option<Ident>,
    /// A constant expression; `{v, …}` parses as [`ExprKind::ArrayLit`].
    pub value: Expr,
}

/// Modifier keywords on a class or member. T3 modifiers are reported by the parser
/// (`CAJETA_ERROR_NOT_IMPLEMENTED`) and not recorded here.
#[derive(Clone, PartialEq, Debug, Default)]
pub struct Modifiers {
    /// `public`.
    pub public: bool,
    /// `protected`.
    pub protected: bool,
    /// `private`.
    pub private: bool,
    /// `static`.
    pub is_static: bool,
    /// `final`.
    pub is_final: bool,
    /// `native` (our extension, `docs/spec-decisions.md`): a `static` method without a body,
    /// supplied by the embedding host.
    pub native: bool,
}

/// A class declaration.
#[derive(Clone, PartialEq, Debug)]
pub struct ClassDecl {
    /// Annotations before the modifiers.
    pub annotations: Vec<Annotation>,
    /// Modifiers.
    pub modifiers: Modifiers,
    /// The class name.
    pub name: Ident,
    /// Members in textual order.
    pub members: Vec<Member>,
    /// From the first annotation/modifier/`class` to the closing brace.
    pub span: Span,
}

/// A class member.
#[derive(Clone, PartialEq, Debug)]
pub enum Member {
    /// A field declaration (possibly several names).
    Field(FieldDecl),
    /// A method.
    Method(MethodDecl),
    /// A constructor.
    Constructor(CtorDecl),
    /// A destructor `~Name() { … }` (T2).
    Destructor(DtorDecl),
    /// A `static { … }` block (T2).
    StaticInit(Block),
}

/// `modifiers Type a = 1, b;`
#[derive(Clone, PartialEq, Debug)]
pub struct FieldDecl {
    /// Annotations.
    pub annotations: Vec<Annotation>,
    /// Modifiers.
    pub modifiers: Modifiers,
    /// The declared type.
    pub ty: TypeExpr,
    /// Each declarator: name and optional initialiser.
    pub vars: Vec<(Ident, Option<Expr>)>,
    /// The whole declaration.
    pub span: Span,
}

/// A method parameter `final? #? Type name`.
#[derive(Clone, PartialEq, Debug)]
pub struct Param {
    /// `final`.
    pub is_final: bool,
    /// `#Type` (T2; acts as a plain parameter).
    pub transfer: bool,
    /// Where the parameter's declaration starts (`final`, `#` or the type).
    pub start: Span,
    /// Annotations before it (none is known: each is warned about).
    pub annotations: Vec<Annotation>,
    /// The type.
    pub ty: TypeExpr,
    /// The name.
    pub name: Ident,
}

/// A method declaration.
#[derive(Clone, PartialEq, Debug)]
pub struct MethodDecl {
    /// Annotations (`@Kernel`, `@Device`, …).
    pub annotations: Vec<Annotation>,
    /// Modifiers.
    pub modifiers: Modifiers,
    /// Result type; `None` for `void`.
    pub ret: Option<TypeExpr>,
    /// `#Type` result (T2).
    pub ret_transfer: bool,
    /// The name.
    pub name: Ident,
    /// Parameters.
    pub params: Vec<Param>,
    /// The body (empty for a `native` method, whose declaration ends in `;`).
    pub body: Block,
    /// The whole declaration.
    pub span: Span,
}

/// A constructor `Name(params) { … }`.
#[derive(Clone, PartialEq, Debug)]
pub struct CtorDecl {
    /// Annotations.
    pub annotations: Vec<Annotation>,
    /// Modifiers.
    pub modifiers: Modifiers,
    /// The class name as written.
    pub name: Ident,
    /// Parameters.
    pub params: Vec<Param>,
    /// The body.
    pub body: Block,
    /// The whole declaration.
    pub span: Span,
}

/// A destructor `~Name() { … }`.
#[derive(Clone, PartialEq, Debug)]
pub struct DtorDecl {
    /// Annotations.
    pub annotations: Vec<Annotation>,
    /// The class name as written.
    pub name: Ident,
    /// The body.
    pub body: Block,
    /// The whole declaration.
    pub span: Span,
}

/// A primitive type keyword.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum PrimType {
    /// `boolean`.
    Bool,
    /// `char`.
    Char,
    /// `int8`.
    I8,
    /// `uint8`.
    U8,
    /// `int16`.
    I16,
    /// `uint16`.
    U16,
    /// `int32`.
    I32,
    /// `uint32`.
    U32,
    /// `int64`.
    I64,
    /// `uint64`.
    U64,
    /// `float16` (T2).
    F16,
    /// `float32`.
    F32,
    /// `float64`.
    F64,
    /// `int128`, `uint128`, `float128`, `float8e4m3`, …: never implemented here; the keyword is
    /// kept for the error message.
    Unsupported(&'static str),
}

/// A type as written.
#[derive(Clone, PartialEq, Debug)]
pub struct TypeExpr {
    /// What it is.
    pub kind: TypeKind,
    /// Where.
    pub span: Span,
}

/// The forms of a written type.
#[derive(Clone, PartialEq, Debug)]
pub enum TypeKind {
    /// A primitive keyword.
    Prim(PrimType),
    /// A (possibly qualified) class name with optional type arguments:
    /// `String`, `KernelBuffer<float32>`, `Vector<int32, 4>`, `bfloat16`.
    Named {
        /// The name.
        name: QualName,
        /// Type arguments (empty without `<…>`).
        args: Vec<TypeArg>,
    },
    /// `T[]`.
    Array(Box<TypeExpr>),
}

/// A type argument: a type or an integer constant expression.
#[derive(Clone, PartialEq, Debug)]
pub enum TypeArg {
    /// A type.
    Type(TypeExpr),
    /// A constant (`4` in `Vector<float32, 4>`).
    Const(Expr),
}

/// `{ … }`.
#[derive(Clone, PartialEq, Debug)]
pub struct Block {
    /// Statements in order.
    pub stmts: Vec<Stmt>,
    /// From `{` to `}`.
    pub span: Span,
}

/// A statement.
#[derive(Clone, PartialEq, Debug)]
pub struct Stmt {
    /// What it is.
    pub kind: StmtKind,
    /// Where (first character to the end).
    pub span: Span,
}

/// `final? Type a = e, b #= f, c`.
#[derive(Clone, PartialEq, Debug)]
pub struct LocalDecl {
    /// `final`.
    pub is_final: bool,
    /// The type.
    pub ty: TypeExpr,
    /// The declarators.
    pub vars: Vec<Declarator>,
    /// The whole declaration.
    pub span: Span,
}

/// One declarator of a local declaration.
#[derive(Clone, PartialEq, Debug)]
pub struct Declarator {
    /// The name.
    pub name: Ident,
    /// The initialiser, if any.
    pub init: Option<Expr>,
    /// True if written with `#=`.
    pub transfer: bool,
}

/// Statement forms.
#[derive(Clone, PartialEq, Debug)]
pub enum StmtKind {
    /// A local variable declaration.
    Local(LocalDecl),
    /// An expression statement (assignment, call, creation, `++`/`--`, launch).
    Expr(Expr),
    /// A nested block.
    Block(Block),
    /// `;`.
    Empty,
    /// `if (cond) then else els`.
    If {
        /// Condition.
        cond: Expr,
        /// Then branch.
        then: Box<Stmt>,
        /// Else branch.
        els: Option<Box<Stmt>>,
    },
    /// `while (cond) body`.
    While {
        /// Condition.
        cond: Expr,
        /// Body.
        body: Box<Stmt>,
    },
    /// `do body while (cond);` (T2).
    DoWhile {
        /// Body.
        body: Box<Stmt>,
        /// Condition.
        cond: Expr,
    },
    /// `for (init; cond; update) body`.
    For {
        /// Initialiser.
        init: Option<ForInit>,
        /// Condition (`None`: true).
        cond: Option<Expr>,
        /// Update expression statements.
        update: Vec<Expr>,
        /// Body.
        body: Box<Stmt>,
    },
    /// `for (I i, T v : e) body` or `for (T v : e) body`.
    ForEach {
        /// The optional index variable (type and name).
        index: Option<(TypeExpr, Ident)>,
        /// Which of the index and element variables are `final` (as in Java; our extension
        /// of LANGUAGE §7's grammar: spec-questions 37).
        finals: (bool, bool),
        /// The element variable's type.
        ty: TypeExpr,
        /// The element variable.
        name: Ident,
        /// The iterable (an array, or `buf.range(n)` in kernels).
        iterable: Expr,
        /// Body.
        body: Box<Stmt>,
    },
    /// `switch (selector) { groups }` statement form (T2).
    Switch {
        /// Selector.
        selector: Expr,
        /// The case groups in order.
        groups: Vec<SwitchGroup>,
    },
    /// `label: stmt`.
    Labeled {
        /// The label.
        label: Ident,
        /// The labelled statement.
        body: Box<Stmt>,
    },
    /// `break label?;`.
    Break(Option<Ident>),
    /// `continue label?;`.
    Continue(Option<Ident>),
    /// `return;`, `return e;`, `return #= e;`.
    Return {
        /// The value.
        value: Option<Expr>,
        /// True for `return #= e;`.
        transfer: bool,
    },
}

/// The initialiser of a C-style `for`.
#[derive(Clone, PartialEq, Debug)]
pub enum ForInit {
    /// A declaration.
    Local(LocalDecl),
    /// Expression statements.
    Exprs(Vec<Expr>),
}

/// A switch label.
#[derive(Clone, PartialEq, Debug)]
pub enum CaseLabel {
    /// `case K:` (or one constant of `case 2, 3 ->`).
    Case(Expr),
    /// `default`.
    Default(Span),
}

/// Stacked labels and the statements after them (statement form).
#[derive(Clone, PartialEq, Debug)]
pub struct SwitchGroup {
    /// The labels.
    pub labels: Vec<CaseLabel>,
    /// The statements (falling through to the next group unless they `break`).
    pub body: Vec<Stmt>,
}

/// One arm of a switch expression: `case 1, 2 -> e;` or `default -> e;`.
#[derive(Clone, PartialEq, Debug)]
pub struct SwitchArm {
    /// The labels.
    pub labels: Vec<CaseLabel>,
    /// The value.
    pub value: Expr,
}

/// `heap` or `stack`.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Placement {
    /// `heap`.
    Heap,
    /// `stack`.
    Stack,
}

/// A call argument, positional or named (`name: value`).
#[derive(Clone, PartialEq, Debug)]
pub struct Arg {
    /// The name, for a named argument.
    pub name: Option<Ident>,
    /// The value.
    pub value: Expr,
}

/// Unary prefix operators.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum UnOp {
    /// `+e`.
    Plus,
    /// `-e`.
    Neg,
    /// `!e`.
    Not,
    /// `~e`.
    BitNot,
    /// `++e` (T2).
    PreInc,
    /// `--e` (T2).
    PreDec,
}

/// Postfix operators (T2).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum PostOp {
    /// `e++`.
    Inc,
    /// `e--`.
    Dec,
}

/// Binary operators (also the operator of a compound assignment).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum BinOp {
    /// `*`.
    Mul,
    /// `/`.
    Div,
    /// `%`.
    Rem,
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `<<`.
    Shl,
    /// `>>`.
    Shr,
    /// `>>>`.
    Ushr,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `&`.
    BitAnd,
    /// `^`.
    BitXor,
    /// `|`.
    BitOr,
    /// `&&`.
    And,
    /// `||`.
    Or,
}

impl BinOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Ushr => ">>>",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::BitAnd => "&",
            BinOp::BitXor => "^",
            BinOp::BitOr => "|",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }
}

/// An expression.
#[derive(Clone, PartialEq, Debug)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where (first character to the end).
    pub span: Span,
}

/// Expression forms.
#[derive(Clone, PartialEq, Debug)]
pub enum ExprKind {
    /// An integer literal. The parser has checked the digits and that the value fits 64 bits.
    Int {
        /// The magnitude (for a `-` directly applied, see [`UnOp::Neg`]: the checker folds it).
        value: u64,
        /// Written in hex, octal or binary.
        non_decimal: bool,
        /// `l`/`L` suffix.
        long: bool,
    },
    /// A float literal.
    Float {
        /// The value rounded to float64 (for an `f` literal, rounded directly to float32 and
        /// widened, never through float64 first).
        value: f64,
        /// `f`/`F` suffix.
        f32_suffix: bool,
        /// `d`/`D` suffix.
        f64_suffix: bool,
        /// The literal's text without `_` and suffix (for exact rounding to float16/bfloat16).
        text: String,
    },
    /// A char literal (one code point).
    Char(u32),
    /// A string literal (escapes resolved).
    Str(String),
    /// `true` / `false`.
    Bool(bool),
    /// `null`.
    Null,
    /// A bare name.
    Name(Ident),
    /// `this`.
    This,
    /// `( e )`.
    Paren(Box<Expr>),
    /// `e.name` (also each step of a qualified name `a.b.c`).
    Field {
        /// The object, class or package prefix.
        target: Box<Expr>,
        /// The member.
        name: Ident,
    },
    /// A library generic type in expression position: `KernelBuffer<float32>` before `.alloc`.
    GenericName {
        /// The type name.
        name: Ident,
        /// Its arguments.
        args: Vec<TypeArg>,
    },
    /// `m(args)`, `e.m(args)`, `e.m<A>(args)`.
    Call {
        /// The receiver (`None` for a bare call).
        target: Option<Box<Expr>>,
        /// The method name.
        name: Ident,
        /// Method type arguments (`vload<4>`).
        type_args: Vec<TypeArg>,
        /// Arguments.
        args: Vec<Arg>,
    },
    /// `e(args)` where `e` is not a name: only valid completing a launch,
    /// `k.launch(s, grid: …, block: …)(args)`.
    Invoke {
        /// The callee expression (for a launch, a `Call` named `launch`).
        callee: Box<Expr>,
        /// Arguments.
        args: Vec<Arg>,
    },
    /// `e[i]`.
    Index {
        /// The array or buffer.
        target: Box<Expr>,
        /// The index.
        index: Box<Expr>,
    },
    /// A prefix operator.
    Unary {
        /// The operator.
        op: UnOp,
        /// The operand.
        operand: Box<Expr>,
    },
    /// `e++` / `e--`.
    Postfix {
        /// The operator.
        op: PostOp,
        /// The operand.
        operand: Box<Expr>,
    },
    /// A binary operator.
    Binary {
        /// The operator.
        op: BinOp,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
    },
    /// `target = value`, `target op= value` or `target #= value`.
    Assign {
        /// `None` for `=`/`#=`, else the compound operator.
        op: Option<BinOp>,
        /// True for `#=`.
        transfer: bool,
        /// The target.
        target: Box<Expr>,
        /// The value.
        value: Box<Expr>,
    },
    /// `(T) e` with `T` primitive (optionally an array type).
    Cast {
        /// The target type.
        ty: TypeExpr,
        /// The operand.
        expr: Box<Expr>,
    },
    /// `#e`.
    Transfer(Box<Expr>),
    /// `c ? a : b` (T2).
    Cond {
        /// Condition.
        cond: Box<Expr>,
        /// Value if true.
        then: Box<Expr>,
        /// Value if false.
        els: Box<Expr>,
    },
    /// `heap T(args)` / `stack T(args)`.
    New {
        /// `heap` or `stack`.
        placement: Placement,
        /// The class type (with type arguments).
        ty: TypeExpr,
        /// Constructor arguments.
        args: Vec<Arg>,
    },
    /// `heap T[n]`, `heap T[n][m]` (T2), `heap T[] { a, b }` (T2).
    NewArray {
        /// `heap` or `stack`.
        placement: Placement,
        /// The element type (`T` in `T[n]`).
        elem: TypeExpr,
        /// The lengths (empty for the initialiser form).
        dims: Vec<Expr>,
        /// The initialiser values (`{ … }` form).
        init: Option<Vec<Expr>>,
    },
    /// `shared T[n]` (kernels only).
    SharedArray {
        /// The element type.
        elem: TypeExpr,
        /// The length.
        len: Box<Expr>,
    },
    /// `[a, b, c]` (T2), also `{a, b}` in annotation arguments.
    ArrayLit(Vec<Expr>),
    /// `switch (e) { case 1 -> a; default -> b; }` (T2).
    Switch {
        /// The selector.
        selector: Box<Expr>,
        /// The arms.
        arms: Vec<SwitchArm>,
    },
}
