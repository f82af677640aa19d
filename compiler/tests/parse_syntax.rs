//! Parser tests: precedence, declarations vs expressions, generics, launches, statements,
//! declarations, T3 rejection and error recovery. Trees are compared through a compact
//! S-expression rendering so that each test states the expected shape in one line.

use cajeta_compiler::ast::*;
use cajeta_compiler::diag::{Diag, SourceFile};
use cajeta_compiler::parser::parse;

// ----- rendering -----

fn prim(p: PrimType) -> &'static str {
    match p {
        PrimType::Bool => "boolean",
        PrimType::Char => "char",
        PrimType::I8 => "int8",
        PrimType::U8 => "uint8",
        PrimType::I16 => "int16",
        PrimType::U16 => "uint16",
        PrimType::I32 => "int32",
        PrimType::U32 => "uint32",
        PrimType::I64 => "int64",
        PrimType::U64 => "uint64",
        PrimType::F16 => "float16",
        PrimType::F32 => "float32",
        PrimType::F64 => "float64",
        PrimType::Unsupported(s) => s,
    }
}

fn ty(t: &TypeExpr) -> String {
    match &t.kind {
        TypeKind::Prim(p) => prim(*p).to_string(),
        TypeKind::Named { name, args } if args.is_empty() => name.joined(),
        TypeKind::Named { name, args } => format!("{}<{}>", name.joined(), targs(args)),
        TypeKind::Array(e) => format!("{}[]", ty(e)),
    }
}

fn targs(a: &[TypeArg]) -> String {
    let v: Vec<String> = a
        .iter()
        .map(|a| match a {
            TypeArg::Type(t) => ty(t),
            TypeArg::Const(e) => ex(e),
        })
        .collect();
    v.join(",")
}

fn args(a: &[Arg]) -> String {
    let v: Vec<String> = a
        .iter()
        .map(|a| match &a.name {
            Some(n) => format!("{}: {}", n.name, ex(&a.value)),
            None => ex(&a.value),
        })
        .collect();
    v.join(", ")
}

fn list(v: &[Expr]) -> String {
    v.iter().map(ex).collect::<Vec<_>>().join(", ")
}

fn un(op: UnOp) -> &'static str {
    match op {
        UnOp::Plus => "+",
        UnOp::Neg => "-",
        UnOp::Not => "!",
        UnOp::BitNot => "~",
        UnOp::PreInc => "++",
        UnOp::PreDec => "--",
    }
}

fn ex(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int { value, long, .. } => format!("{value}{}", if *long { "L" } else { "" }),
        ExprKind::Float {
            text, f32_suffix, ..
        } => format!("{text}{}", if *f32_suffix { "f" } else { "" }),
        ExprKind::Char(c) => format!("'{}'", char::from_u32(*c).unwrap_or('?')),
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::Null => "null".into(),
        ExprKind::Name(i) => i.name.clone(),
        ExprKind::This => "this".into(),
        ExprKind::Paren(e) => format!("(paren {})", ex(e)),
        ExprKind::Field { target, name } => format!("{}.{}", ex(target), name.name),
        ExprKind::GenericName { name, args } => format!("{}<{}>", name.name, targs(args)),
        ExprKind::Call {
            target,
            name,
            type_args,
            args: a,
        } => {
            let t = target
                .as_ref()
                .map(|t| format!("{}.", ex(t)))
                .unwrap_or_default();
            let ta = if type_args.is_empty() {
                String::new()
            } else {
                format!("<{}>", targs(type_args))
            };
            format!("(call {t}{}{ta} {})", name.name, args(a))
        }
        ExprKind::Invoke { callee, args: a } => format!("(invoke {} {})", ex(callee), args(a)),
        ExprKind::Index { target, index } => format!("{}[{}]", ex(target), ex(index)),
        ExprKind::Unary { op, operand } => format!("({} {})", un(*op), ex(operand)),
        ExprKind::Postfix { op, operand } => {
            format!(
                "(post{} {})",
                if *op == PostOp::Inc { "++" } else { "--" },
                ex(operand)
            )
        }
        ExprKind::Binary { op, lhs, rhs } => format!("({} {} {})", op.symbol(), ex(lhs), ex(rhs)),
        ExprKind::Assign {
            op,
            transfer,
            target,
            value,
        } => {
            let o = if *transfer {
                "#".to_string()
            } else {
                op.map(|o| o.symbol().to_string()).unwrap_or_default()
            };
            format!("({o}= {} {})", ex(target), ex(value))
        }
        ExprKind::Cast { ty: t, expr } => format!("(cast {} {})", ty(t), ex(expr)),
        ExprKind::Transfer(e) => format!("(# {})", ex(e)),
        ExprKind::Cond { cond, then, els } => format!("(? {} {} {})", ex(cond), ex(then), ex(els)),
        ExprKind::New {
            placement,
            ty: t,
            args: a,
        } => format!("({} {}({}))", place(*placement), ty(t), args(a)),
        ExprKind::NewArray {
            placement,
            elem,
            dims,
            init,
        } => {
            let d: String = dims.iter().map(|d| format!("[{}]", ex(d))).collect();
            let i = init
                .as_ref()
                .map(|v| format!("[]{{{}}}", list(v)))
                .unwrap_or_default();
            format!("({} {}{d}{i})", place(*placement), ty(elem))
        }
        ExprKind::SharedArray { elem, len } => format!("(shared {}[{}])", ty(elem), ex(len)),
        ExprKind::ArrayLit(v) => format!("[{}]", list(v)),
        ExprKind::Switch { selector, arms } => {
            let a: Vec<String> = arms
                .iter()
                .map(|a| format!("({} -> {})", labels(&a.labels), ex(&a.value)))
                .collect();
            format!("(switch {} {})", ex(selector), a.join(" "))
        }
    }
}

fn labels(l: &[CaseLabel]) -> String {
    l.iter()
        .map(|l| match l {
            CaseLabel::Case(e) => format!("case {}", ex(e)),
            CaseLabel::Default(_) => "default".into(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn place(p: Placement) -> &'static str {
    match p {
        Placement::Heap => "heap",
        Placement::Stack => "stack",
    }
}

fn local(d: &LocalDecl) -> String {
    let vars: Vec<String> = d
        .vars
        .iter()
        .map(|v| match &v.init {
            Some(i) => format!(
                "{} {}= {}",
                v.name.name,
                if v.transfer { "#" } else { "" },
                ex(i)
            ),
            None => v.name.name.clone(),
        })
        .collect();
    format!(
        "(local {}{} {})",
        if d.is_final { "final " } else { "" },
        ty(&d.ty),
        vars.join(", ")
    )
}

fn st(s: &Stmt) -> String {
    match &s.kind {
        StmtKind::Local(d) => local(d),
        StmtKind::Expr(e) => ex(e),
        StmtKind::Block(b) => block(b),
        StmtKind::Empty => ";".into(),
        StmtKind::If { cond, then, els } => match els {
            Some(e) => format!("(if {} {} {})", ex(cond), st(then), st(e)),
            None => format!("(if {} {})", ex(cond), st(then)),
        },
        StmtKind::While { cond, body } => format!("(while {} {})", ex(cond), st(body)),
        StmtKind::DoWhile { body, cond } => format!("(do {} {})", st(body), ex(cond)),
        StmtKind::For {
            init,
            cond,
            update,
            body,
        } => {
            let i = match init {
                None => "_".to_string(),
                Some(ForInit::Local(d)) => local(d),
                Some(ForInit::Exprs(v)) => list(v),
            };
            let c = cond.as_ref().map(ex).unwrap_or_else(|| "_".into());
            format!("(for {i}; {c}; {} {})", list(update), st(body))
        }
        StmtKind::ForEach {
            index,
            finals,
            ty: t,
            name,
            iterable,
            body,
        } => {
            let fin = |f: bool| if f { "final " } else { "" };
            let i = index
                .as_ref()
                .map(|(t, n)| format!("{}{} {}, ", fin(finals.0), ty(t), n.name))
                .unwrap_or_default();
            format!(
                "(foreach {i}{}{} {} : {} {})",
                fin(finals.1),
                ty(t),
                name.name,
                ex(iterable),
                st(body)
            )
        }
        StmtKind::Switch { selector, groups } => {
            let g: Vec<String> = groups
                .iter()
                .map(|g| {
                    format!(
                        "({}: {})",
                        labels(&g.labels),
                        g.body.iter().map(st).collect::<Vec<_>>().join(" ")
                    )
                })
                .collect();
            format!("(switch {} {})", ex(selector), g.join(" "))
        }
        StmtKind::Labeled { label, body } => format!("({}: {})", label.name, st(body)),
        StmtKind::Break(l) => format!(
            "(break{})",
            l.as_ref()
                .map(|l| format!(" {}", l.name))
                .unwrap_or_default()
        ),
        StmtKind::Continue(l) => {
            format!(
                "(continue{})",
                l.as_ref()
                    .map(|l| format!(" {}", l.name))
                    .unwrap_or_default()
            )
        }
        StmtKind::Return { value, transfer } => match value {
            Some(v) => format!("(return{} {})", if *transfer { " #=" } else { "" }, ex(v)),
            None => "(return)".into(),
        },
    }
}

fn block(b: &Block) -> String {
    format!(
        "{{{}}}",
        b.stmts.iter().map(st).collect::<Vec<_>>().join(" ")
    )
}

/// The canonical program of the specification (spec/README.md).
pub const SAXPY: &str = r#"package demo;

import cajeta.xpu.KernelBuffer;
import cajeta.xpu.KernelStream;
import cajeta.xpu.KernelThread;

public class Saxpy {
    @Kernel
    public static void saxpy(KernelBuffer<float32> y, KernelBuffer<float32> x, float32 a, uint32 n) {
        uint32 i = KernelThread.globalIdX();
        if (i < n) { y[i] = a * x[i] + y[i]; }
    }

    public static int32 run() {
        uint32 n = 1000;
        float32[] hx = heap float32[n];
        float32[] hy = heap float32[n];
        for (uint32 i = 0; i < n; i = i + 1) { hx[i] = (float32) i; hy[i] = 1.0f; }
        KernelBuffer<float32> x = heap KernelBuffer<float32>(n);
        KernelBuffer<float32> y = heap KernelBuffer<float32>(n);
        x.upload(hx);
        y.upload(hy);
        KernelStream s = KernelStream.current();
        saxpy.launch(s, grid: [(n + 255) / 256], block: [256])(y, x, 2.5f, n);
        s.sync();
        y.download(hy);
        float32 sum = 0.0f;
        for (uint32 i = 0; i < n; i = i + 1) { sum = sum + hy[i]; }
        System.stdout.println("y[0]=" + hy[0] + " y[999]=" + hy[999] + " sum=" + sum);
        return 0;
    }
}
"#;

// ----- helpers -----

/// Diagnostics as `line:col CODE`.
fn diags(src: &str) -> Vec<String> {
    let (_, d) = parse(0, src);
    render(src, &d)
}

fn render(src: &str, d: &[Diag]) -> Vec<String> {
    let f = SourceFile::new("t", src);
    d.iter()
        .map(|d| {
            let (l, c) = d.span.map(|s| f.line_col(s.start)).unwrap_or((0, 0));
            format!("{l}:{c} {}", d.code)
        })
        .collect()
}

/// The statements of a method body, rendered; asserts there are no diagnostics.
fn body(src: &str) -> String {
    let text = format!("class C {{\nvoid m() {{\n{src}\n}}\n}}");
    let (u, d) = parse(0, &text);
    assert!(d.is_empty(), "diagnostics for {src:?}: {:?}", d);
    match &u.classes[0].members[0] {
        Member::Method(m) => m.body.stmts.iter().map(st).collect::<Vec<_>>().join(" "),
        m => panic!("not a method: {m:?}"),
    }
}

/// One expression (as `return EXPR;`), rendered.
fn e(src: &str) -> String {
    let s = body(&format!("return {src};"));
    s.strip_prefix("(return ")
        .and_then(|s| s.strip_suffix(')'))
        .unwrap_or(&s)
        .to_string()
}

/// Diagnostics (`line:col CODE`) for a method body; line 1 is the body's first line.
fn body_diags(src: &str) -> Vec<String> {
    let text = format!("class C {{ void m() {{\n{src}\n}} }}");
    diags(&text)
        .into_iter()
        .map(|d| {
            let (lc, rest) = d.split_once(' ').unwrap_or(("", ""));
            let (l, c) = lc.split_once(':').unwrap_or(("0", "0"));
            format!(
                "{}:{c} {rest}",
                l.parse::<u32>().unwrap_or(0).saturating_sub(1)
            )
        })
        .collect()
}

// ----- precedence (LANGUAGE §8.1) -----

#[test]
fn precedence_examples_from_the_spec() {
    assert_eq!(e("(float32) i - 2.0f"), "(- (cast float32 i) 2.0f)");
    assert_eq!(e("(int32) h[0] * 2"), "(* (cast int32 h[0]) 2)");
    assert_eq!(e("(float32) -x"), "(cast float32 (- x))");
    assert_eq!(e("-x * y"), "(* (- x) y)");
    assert_eq!(e("a & b == c"), "(& a (== b c))");
}

#[test]
fn precedence_levels() {
    assert_eq!(e("a + b * c - d"), "(- (+ a (* b c)) d)");
    assert_eq!(
        e("a || b && c | d ^ e & f"),
        "(|| a (&& b (| c (^ d (& e f)))))"
    );
    assert_eq!(e("a << 2 + 1"), "(<< a (+ 2 1))");
    assert_eq!(e("a >> b >>> c < d"), "(< (>>> (>> a b) c) d)");
    assert_eq!(e("a < b == c >= d"), "(== (< a b) (>= c d))");
    assert_eq!(e("a != b && c"), "(&& (!= a b) c)");
    assert_eq!(e("a / b % c * d"), "(* (% (/ a b) c) d)");
    assert_eq!(e("!a && ~b == c"), "(&& (! a) (== (~ b) c))");
    assert_eq!(e("- - x"), "(- (- x))");
    assert_eq!(e("-2147483648"), "(- 2147483648)");
    assert_eq!(e("c ? a : b ? d : e"), "(? c a (? b d e))");
    assert_eq!(e("c || d ? a + 1 : b"), "(? (|| c d) (+ a 1) b)");
    assert_eq!(e("a = b = c"), "(= a (= b c))");
    assert_eq!(e("x += y * 2"), "(+= x (* y 2))");
    assert_eq!(e("x <<= 2"), "(<<= x 2)");
    assert_eq!(e("x >>= 2"), "(>>= x 2)");
    assert_eq!(e("x >>>= 1"), "(>>>= x 1)");
    assert_eq!(e("x #= y"), "(#= x y)");
    assert_eq!(e("#p"), "(# p)");
    assert_eq!(e("#this.f"), "(# this.f)");
    assert_eq!(e("++i + i++"), "(+ (++ i) (post++ i))");
    assert_eq!(e("a.b[i].c(1)[2]"), "(call a.b[i].c 1)[2]");
    assert_eq!(e("(a + b) * c"), "(* (paren (+ a b)) c)");
    assert_eq!(e("(x) + 1"), "(+ (paren x) 1)");
    assert_eq!(e("(int32)(x)"), "(cast int32 (paren x))");
    assert_eq!(e("(bfloat16) x"), "(cast bfloat16 x)");
    assert_eq!(e("(float32[]) x"), "(cast float32[] x)");
    assert_eq!(e("(int32) +x"), "(cast int32 (+ x))");
    assert_eq!(e("\"x\" + 1 + 2"), "(+ (+ \"x\" 1) 2)");
    assert_eq!(e("'a' == c"), "(== 'a' c)");
    assert_eq!(
        e("true != false || null == this"),
        "(|| (!= true false) (== null this))"
    );
}

#[test]
fn shifts_are_built_from_adjacent_tokens() {
    assert_eq!(e("a >> b"), "(>> a b)");
    assert_eq!(e("a>>>b"), "(>>> a b)");
    assert_eq!(e("a << b"), "(<< a b)");
    assert_eq!(body_diags("return a > > b;"), ["1:12 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(body_diags("return a < < b;"), ["1:12 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(
        body_diags("return a >/**/> b;"),
        ["1:15 CAJETA_ERROR_SYNTAX"]
    );
    assert_eq!(body_diags("return a >> > b;"), ["1:13 CAJETA_ERROR_SYNTAX"]);
}

#[test]
fn literals_in_expressions() {
    assert_eq!(e("18446744073709551615"), "18446744073709551615");
    assert_eq!(e("0x1.8p3"), "0x1.8p3");
    assert_eq!(e("1_000L"), "1000L");
    assert_eq!(body_diags("int32 x = 08;"), ["1:11 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(
        body_diags("int64 x = 9223372036854775808L;"),
        ["1:11 CAJETA_ERROR_SYNTAX"]
    );
    assert_eq!(
        body_diags("float64 x = 1e309;"),
        ["1:13 CAJETA_ERROR_SYNTAX"]
    );
    // A bad escape is reported at the literal's quote (§10.1: its first character).
    assert_eq!(body_diags("char c = '\\q';"), ["1:10 CAJETA_ERROR_SYNTAX"]);
    let err = ["1:11 CAJETA_ERROR_SYNTAX"];
    assert_eq!(body_diags("int64 x = 9223372036854775809L;"), err);
    assert_eq!(
        body_diags("int64 x = -(9223372036854775808L);"),
        ["1:13 CAJETA_ERROR_SYNTAX"]
    );
    assert_eq!(
        body_diags("int64 x = 1 - 9223372036854775808L;"),
        ["1:15 CAJETA_ERROR_SYNTAX"]
    );
    assert_eq!(e("-9223372036854775808L"), "(- 9223372036854775808L)");
    assert_eq!(e("-9223372036854775808"), "(- 9223372036854775808)");
}

// ----- generics (LANGUAGE §9) -----

#[test]
fn generics_in_type_position() {
    assert_eq!(
        body("KernelBuffer<float32> x = heap KernelBuffer<float32>(n);"),
        "(local KernelBuffer<float32> x = (heap KernelBuffer<float32>(n)))"
    );
    assert_eq!(
        body("KernelBuffer<Vector<int32,4>> b;"),
        "(local KernelBuffer<Vector<int32,4>> b)"
    );
    assert_eq!(
        body("Vector<float16, 2 * 4> v;"),
        "(local Vector<float16,(* 2 4)> v)"
    );
    assert_eq!(body("Vector<float32, N> v;"), "(local Vector<float32,N> v)");
    assert_eq!(
        body("Vector<float32, N * 2> v;"),
        "(local Vector<float32,(* N 2)> v)"
    );
    assert_eq!(
        body("cajeta.xpu.KernelBuffer<int8>[] bs;"),
        "(local cajeta.xpu.KernelBuffer<int8>[] bs)"
    );
    assert_eq!(
        body("Vector<float32,4> v = stack Vector<float32,4>(1.0f, 2.0f, 3.0f, 4.0f);"),
        "(local Vector<float32,4> v = (stack Vector<float32,4>(1.0f, 2.0f, 3.0f, 4.0f)))"
    );
}

#[test]
fn generics_in_expression_position() {
    assert_eq!(
        e("KernelBuffer<float32>.alloc(n)"),
        "(call KernelBuffer<float32>.alloc n)"
    );
    assert_eq!(
        e("Buffer<Vector<int32, 4>>.alloc(n)"),
        "(call Buffer<Vector<int32,4>>.alloc n)"
    );
    assert_eq!(e("buf.vload<4>(i)"), "(call buf.vload<4> i)");
    assert_eq!(e("i < n && j > m"), "(&& (< i n) (> j m))");
    assert_eq!(e("a.load < b"), "(< a.load b)");
    assert_eq!(e("a.vload < b"), "(< a.vload b)");
    assert_eq!(e("a.vload<4>(i).x"), "(call a.vload<4> i).x");
    // Not a generic type name: `<` is less-than.
    assert_eq!(e("Foo < x"), "(< Foo x)");
    // A generic name whose `<` does not open type arguments falls back to less-than.
    assert_eq!(e("Vector < 3 + x"), "(< Vector (+ 3 x))");
    assert_eq!(
        body("KernelBuffer<float32>.alloc(n).upload(h);"),
        "(call (call KernelBuffer<float32>.alloc n).upload h)"
    );
}

// ----- launches and named arguments (XPU §3.4, LANGUAGE §8.4) -----

#[test]
fn launch_statement() {
    assert_eq!(
        body("saxpy.launch(s, grid: [(n + 255) / 256], block: [256])(y, x, 2.5f, n);"),
        "(invoke (call saxpy.launch s, grid: [(/ (paren (+ n 255)) 256)], block: [256]) y, x, 2.5f, n)"
    );
    assert_eq!(
        body("Other.blur.launch(grid: [w / 16, h / 16], block: [16, 16], sharedBytes: 64)(dst, n: 3);"),
        "(invoke (call Other.blur.launch grid: [(/ w 16), (/ h 16)], block: [16, 16], sharedBytes: 64) dst, n: 3)"
    );
    assert_eq!(body("f(10, b: 3);"), "(call f 10, b: 3)");
    assert_eq!(body("f(c ? a : b);"), "(call f (? c a b))");
}

// ----- declarations vs expressions (LANGUAGE §7) -----

#[test]
fn declarations_versus_expressions() {
    assert_eq!(body("a b;"), "(local a b)");
    assert_eq!(
        body("a.b.C d = 1, e, f = 2;"),
        "(local a.b.C d = 1, e, f = 2)"
    );
    assert_eq!(body("a[i] = 1;"), "(= a[i] 1)");
    assert_eq!(body("a.b = c;"), "(= a.b c)");
    assert_eq!(body("foo(x);"), "(call foo x)");
    assert_eq!(body("a.b.c(x);"), "(call a.b.c x)");
    assert_eq!(
        body("float32[] a = heap float32[n];"),
        "(local float32[] a = (heap float32[n]))"
    );
    assert_eq!(
        body("int32[][] m = heap int32[3][4];"),
        "(local int32[][] m = (heap int32[3][4]))"
    );
    assert_eq!(
        body("int32[][] m = heap int32[3][];"),
        "(local int32[][] m = (heap int32[][3]))"
    );
    assert_eq!(
        body("int32[] xs = heap int32[] {1, 2, 3};"),
        "(local int32[] xs = (heap int32[]{1, 2, 3}))"
    );
    assert_eq!(
        body("int32[] xs = [1, 2, 3];"),
        "(local int32[] xs = [1, 2, 3])"
    );
    assert_eq!(
        body("final int32 x = 1, y;"),
        "(local final int32 x = 1, y)"
    );
    assert_eq!(body("Params p #= q;"), "(local Params p #= q)");
    assert_eq!(
        body("Params p = heap Params(3, 7);"),
        "(local Params p = (heap Params(3, 7)))"
    );
    assert_eq!(body("heap Foo(1);"), "(heap Foo(1))");
    assert_eq!(body("i++; --j;"), "(post++ i) (-- j)");
    assert_eq!(body("x = y = 0;"), "(= x (= y 0))");
    assert_eq!(
        body("String s = \"a\" + b;"),
        "(local String s = (+ \"a\" b))"
    );
    assert_eq!(body("shared = 1;"), "(= shared 1)");
    assert_eq!(body("shared[0] = 1;"), "(= shared[0] 1)");
    assert_eq!(
        body("Shared<float32> tile = shared float32[256];"),
        "(local Shared<float32> tile = (shared float32[256]))"
    );
    assert_eq!(body("this(1, 2);"), "(call this 1, 2)");
    assert_eq!(body("this.x = x;"), "(= this.x x)");
    assert_eq!(
        body("int32 y = switch (x) { case 1, 2 -> 10; default -> -1; };"),
        "(local int32 y = (switch x (case 1 case 2 -> 10) (default -> (- 1))))"
    );
}

#[test]
fn expression_statement_errors() {
    assert_eq!(body_diags("a + b;"), ["1:1 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(body_diags("x;"), ["1:1 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(body_diags("  1 = 2;"), ["1:3 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(body_diags("f() = 2;"), ["1:1 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(body_diags("(a) = 2;"), ["1:1 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(body_diags("x = 1 + ;"), ["1:9 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(body_diags("int32 x = 1"), ["2:1 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(
        body_diags("Foo f = new Foo(1);"),
        ["1:9 CAJETA_ERROR_SYNTAX"]
    );
    assert_eq!(body_diags("x = #(a + b);"), ["1:5 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(body_diags("5++;"), ["1:1 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(body_diags("int32 a[] = x;"), ["1:8 CAJETA_ERROR_SYNTAX"]);
}

#[test]
fn transfer_in_local_type_is_retired() {
    assert_eq!(
        body_diags("#Foo x = y;"),
        ["1:1 CAJETA_ERROR_TYPE_TRANSFER_RETIRED"]
    );
    assert_eq!(
        body_diags("final #Foo x = y;"),
        ["1:7 CAJETA_ERROR_TYPE_TRANSFER_RETIRED"]
    );
}

// ----- statements -----

#[test]
fn control_statements() {
    assert_eq!(
        body("if (a) x = 1; else if (b) x = 2; else { x = 3; }"),
        "(if a (= x 1) (if b (= x 2) {(= x 3)}))"
    );
    assert_eq!(body("while (i < n) i++;"), "(while (< i n) (post++ i))");
    assert_eq!(
        body("do { i--; } while (i > 0);"),
        "(do {(post-- i)} (> i 0))"
    );
    assert_eq!(
        body("for (uint32 i = 0; i < n; i = i + 1) { s = s + i; }"),
        "(for (local uint32 i = 0); (< i n); (= i (+ i 1)) {(= s (+ s i))})"
    );
    assert_eq!(body("for (;;) break;"), "(for _; _;  (break))");
    assert_eq!(
        body("for (i = 0, j = 1; ; i++, j++) ;"),
        "(for (= i 0), (= j 1); _; (post++ i), (post++ j) ;)"
    );
    assert_eq!(
        body("for (int32 i = 0, j = 2; i < j; i++) {}"),
        "(for (local int32 i = 0, j = 2); (< i j); (post++ i) {})"
    );
    assert_eq!(
        body("for (float32 v : xs) s += v;"),
        "(foreach float32 v : xs (+= s v))"
    );
    assert_eq!(
        body("for (uint32 i, float32 v : x.range(n)) { y[i] = a * v + y[i]; }"),
        "(foreach uint32 i, float32 v : (call x.range n) {(= y[i] (+ (* a v) y[i]))})"
    );
    assert_eq!(
        body("for (Foo f : foos) f.run();"),
        "(foreach Foo f : foos (call f.run ))"
    );
    assert_eq!(
        body("for (final float32 v : xs) s += v;"),
        "(foreach final float32 v : xs (+= s v))"
    );
    assert_eq!(
        body("for (final int32 i, final float32 v : xs) {}"),
        "(foreach final int32 i, final float32 v : xs {})"
    );
    assert_eq!(
        body("for (int32 i, final float32 v : xs) {}"),
        "(foreach int32 i, final float32 v : xs {})"
    );
    assert_eq!(
        body("outer: while (true) { continue outer; }"),
        "(outer: (while true {(continue outer)}))"
    );
    assert_eq!(body("return; "), "(return)");
    assert_eq!(body("return #= x;"), "(return #= x)");
    assert_eq!(body("{ ; }"), "{;}");
}

#[test]
fn switch_statements() {
    assert_eq!(
        body("switch (x) { case 1: case 2, 3: a(); break; default: b(); }"),
        "(switch x (case 1 case 2 case 3: (call a ) (break)) (default: (call b )))"
    );
    assert_eq!(
        body("switch (c) { case 'a' -> f(); default -> { g(); } }"),
        "(switch c (case 'a': (call f ) (break)) (default: {(call g )} (break)))"
    );
    assert_eq!(body("switch (s) { }"), "(switch s )");
}

#[test]
fn switch_expression_needs_default() {
    assert_eq!(
        body_diags("int32 y = switch (x) { case 1 -> 2; };"),
        ["1:11 CAJETA_ERROR_SYNTAX"]
    );
    assert_eq!(
        body_diags("int32 y = switch (x) { case 1: 2; default -> 3; };"),
        ["1:24 CAJETA_ERROR_SYNTAX"]
    );
}

// ----- declarations (LANGUAGE §5) -----

#[test]
fn unit_structure() {
    let src = "package a.b;\nimport cajeta.xpu.*;\nimport x.Y;\n@Wave(width = 32) @Occupancy(maxThreads: 256, other: {1, 2}) public final class K {\n\
               static final int32 N = 4, M;\n private float32[] data;\n K(int32 n) { this.n = n; }\n ~K() { }\n static { N = 1; }\n\
               @Kernel public static void k(final KernelBuffer<float32> y, #Foo f, uint32 n) { }\n\
               static #Foo make() { return heap Foo(); }\n protected String name() { return \"k\"; }\n}\nclass L { }";
    let (u, d) = parse(7, src);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(u.file, 7);
    assert_eq!(u.package.as_ref().map(|p| p.joined()), Some("a.b".into()));
    assert_eq!(u.imports.len(), 2);
    assert!(u.imports[0].wildcard && u.imports[0].path.joined() == "cajeta.xpu");
    assert!(!u.imports[1].wildcard && u.imports[1].path.joined() == "x.Y");
    assert_eq!(u.classes.len(), 2);
    let k = &u.classes[0];
    assert_eq!(k.name.name, "K");
    assert!(k.modifiers.public && k.modifiers.is_final);
    assert_eq!(k.annotations.len(), 2);
    assert_eq!(k.annotations[0].name.joined(), "Wave");
    assert_eq!(
        k.annotations[0].args[0]
            .name
            .as_ref()
            .map(|n| n.name.as_str()),
        Some("width")
    );
    assert_eq!(ex(&k.annotations[0].args[0].value), "32");
    assert_eq!(ex(&k.annotations[1].args[1].value), "[1, 2]");
    assert_eq!(k.span.start, src.find("@Wave").unwrap_or(0) as u32);
    assert_eq!(k.members.len(), 8);
    match &k.members[0] {
        Member::Field(f) => {
            assert!(f.modifiers.is_static && f.modifiers.is_final);
            assert_eq!(f.vars.len(), 2);
            assert_eq!(ty(&f.ty), "int32");
        }
        m => panic!("{m:?}"),
    }
    assert!(
        matches!(&k.members[1], Member::Field(f) if f.modifiers.private && ty(&f.ty) == "float32[]")
    );
    assert!(
        matches!(&k.members[2], Member::Constructor(c) if c.name.name == "K" && c.params.len() == 1)
    );
    assert!(matches!(&k.members[3], Member::Destructor(d) if d.name.name == "K"));
    assert!(matches!(&k.members[4], Member::StaticInit(b) if b.stmts.len() == 1));
    match &k.members[5] {
        Member::Method(m) => {
            assert_eq!(m.annotations[0].name.joined(), "Kernel");
            assert!(m.ret.is_none() && m.modifiers.public && m.modifiers.is_static);
            assert_eq!(m.params.len(), 3);
            assert!(m.params[0].is_final && !m.params[0].transfer);
            assert!(m.params[1].transfer);
            assert_eq!(ty(&m.params[0].ty), "KernelBuffer<float32>");
            assert_eq!(m.span.start, src.find("@Kernel").unwrap_or(0) as u32);
        }
        m => panic!("{m:?}"),
    }
    assert!(
        matches!(&k.members[6], Member::Method(m) if m.ret_transfer && m.ret.as_ref().map(ty) == Some("Foo".into()))
    );
    assert!(matches!(&k.members[7], Member::Method(m) if m.modifiers.protected));
}

#[test]
fn saxpy_parses_cleanly() {
    let (u, d) = parse(0, SAXPY);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(u.classes[0].members.len(), 2);
}

#[test]
fn declaration_errors() {
    assert_eq!(diags("class C { foo() {} }"), ["1:11 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(diags("class C { void x; }"), ["1:11 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(diags("class C { #int32 x; }"), ["1:11 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(diags("static class C { }"), ["1:1 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(
        diags("public public class C { }"),
        ["1:8 CAJETA_ERROR_SYNTAX"]
    );
    assert_eq!(
        diags("class C { } import a.B;"),
        ["1:13 CAJETA_ERROR_SYNTAX"]
    );
    assert_eq!(
        diags("import a.B; package p;"),
        ["1:13 CAJETA_ERROR_SYNTAX"]
    );
    assert_eq!(
        diags("class C { void f(int32 x[]) {} }"),
        ["1:25 CAJETA_ERROR_SYNTAX"]
    );
    assert_eq!(diags("class class { }"), ["1:7 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(
        diags("class C { int32 int8; }"),
        ["1:17 CAJETA_ERROR_SYNTAX"]
    );
    assert_eq!(
        diags("class C { void f() { int32 class = 1; } }"),
        ["1:28 CAJETA_ERROR_SYNTAX"]
    );
    assert_eq!(diags("class C {"), ["1:10 CAJETA_ERROR_SYNTAX"]);
    assert_eq!(diags("class C { void f() { "), ["1:22 CAJETA_ERROR_SYNTAX"]);
}

// ----- T3 constructs (CAJETA_ERROR_NOT_IMPLEMENTED at their first token) -----

#[test]
fn t3_constructs_are_not_implemented() {
    const NI: &str = "CAJETA_ERROR_NOT_IMPLEMENTED";
    assert_eq!(diags("enum E { A }"), [format!("1:1 {NI}")]);
    assert_eq!(diags("public enum E { A }"), [format!("1:8 {NI}")]);
    assert_eq!(
        diags("interface I { void f(); }\nclass C {}"),
        [format!("1:1 {NI}")]
    );
    assert_eq!(diags("record R(int32 x) { }"), [format!("1:1 {NI}")]);
    assert_eq!(diags("@interface A { }"), [format!("1:1 {NI}")]);
    assert_eq!(diags("class C extends B { }"), [format!("1:9 {NI}")]);
    assert_eq!(
        diags("class C implements I, J { void f() {} }"),
        [format!("1:9 {NI}")]
    );
    assert_eq!(diags("class C<T> { }"), [format!("1:8 {NI}")]);
    assert_eq!(diags("abstract class C { }"), [format!("1:1 {NI}")]);
    assert_eq!(
        diags("class C { volatile int32 x; }"),
        [format!("1:11 {NI}")]
    );
    assert_eq!(
        diags("import static a.B.c;\nclass C {}"),
        [format!("1:1 {NI}")]
    );
    assert_eq!(
        diags("class C { class D { } void f() {} }"),
        [format!("1:11 {NI}")]
    );
    assert_eq!(diags("class C { <T> void f() {} }"), [format!("1:11 {NI}")]);
    assert_eq!(
        diags("class C { void f() throws E {} }"),
        [format!("1:20 {NI}")]
    );
    assert_eq!(
        diags("class C { void f(int32... xs) {} }"),
        [format!("1:23 {NI}")]
    );
    assert_eq!(diags("int32 x = 1;"), [format!("1:1 {NI}")]);
    assert_eq!(
        body_diags("try { f(); } catch (E e) { g(); } finally { h(); }\nx = 1;"),
        [format!("1:1 {NI}")]
    );
    assert_eq!(body_diags("throw x;"), [format!("1:1 {NI}")]);
    assert_eq!(body_diags("var x = 1;"), [format!("1:1 {NI}")]);
    assert_eq!(body_diags("assert x;"), [format!("1:1 {NI}")]);
    assert_eq!(body_diags("f(x -> x + 1);"), [format!("1:3 {NI}")]);
    assert_eq!(body_diags("f((a, b) -> a);"), [format!("1:3 {NI}")]);
    assert_eq!(
        body_diags("boolean b = x instanceof Foo;"),
        [format!("1:13 {NI}")]
    );
    assert_eq!(body_diags("super.f();"), [format!("1:1 {NI}")]);
    assert_eq!(body_diags("f(String::valueOf);"), [format!("1:3 {NI}")]);
    assert_eq!(
        body_diags("String s = \"\"\"\n  hi\n  \"\"\";"),
        [format!("1:12 {NI}")]
    );
    assert_eq!(
        body_diags("int32 y = switch (x) { default -> { yield 1; } };"),
        [format!("1:35 {NI}")]
    );
    assert_eq!(body_diags("Class c = C.class;"), [format!("1:13 {NI}")]);
}

// ----- recovery -----

#[test]
fn several_errors_in_one_file() {
    let src = "class A {\n\
               void f() {\n\
               int32 x = ;\n\
               y = 1 +;\n\
               z = 2;\n\
               a + b;\n\
               }\n\
               int32 g( { }\n\
               void h() { if (x { } }\n\
               }\n\
               class B { void k() { q = 08; } }\n";
    assert_eq!(
        diags(src),
        [
            "3:11 CAJETA_ERROR_SYNTAX",
            "4:8 CAJETA_ERROR_SYNTAX",
            "6:1 CAJETA_ERROR_SYNTAX",
            "8:10 CAJETA_ERROR_SYNTAX",
            "9:18 CAJETA_ERROR_SYNTAX",
            "11:26 CAJETA_ERROR_SYNTAX",
        ]
    );
    let (u, _) = parse(0, src);
    assert_eq!(u.classes.len(), 2);
    assert_eq!(u.classes[0].name.name, "A");
    assert_eq!(u.classes[1].name.name, "B");
}

#[test]
fn recovery_keeps_later_members() {
    let (u, d) = parse(0, "class C { int32 x = ; void f() { } static int32 y; }");
    assert_eq!(d.len(), 1);
    assert_eq!(u.classes[0].members.len(), 2);
}

// ----- depth limit -----

fn on_big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    // Debug builds use large frames; the driver runs the compiler on a 256 MiB stack.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(f)
        .map(|h| h.join())
        .unwrap_or_else(|e| panic!("spawn: {e}"))
        .unwrap_or_else(|_| panic!("parser thread panicked"))
}

#[test]
fn deep_nesting_is_reported_not_overflowed() {
    on_big_stack(|| {
        for (open, close) in [
            ("(", ")"),
            ("-", ""),
            ("[", "]"),
            ("f(", ")"),
            ("a = ", ""),
            ("c ? x : ", ""),
            ("#", ""),
        ] {
            let src = format!("x = {}1{};", open.repeat(5000), close.repeat(5000));
            let d = body_diags(&src);
            assert_eq!(d.len(), 1, "{open}: {d:?}");
            assert!(d[0].ends_with("CAJETA_ERROR_SYNTAX"));
        }
        let blocks = format!("{}{}", "{".repeat(5000), "}".repeat(5000));
        assert_eq!(body_diags(&blocks).len(), 1);
        let ifs = "if (a) ".repeat(5000) + "x = 1;";
        assert_eq!(body_diags(&ifs).len(), 1);
        let elses = "if (a) x = 1; else ".repeat(5000) + "x = 1;";
        assert_eq!(body_diags(&elses).len(), 1);
        // Long left-associative chains deepen the tree too.
        let chain = format!("x = 1{};", " + 1".repeat(5000));
        assert_eq!(body_diags(&chain).len(), 1);
        let fields = format!("x = a{};", ".b".repeat(5000));
        assert_eq!(body_diags(&fields).len(), 1);
        let types = format!("{}int32{} x;", "Vector<".repeat(5000), ">".repeat(5000));
        assert_eq!(body_diags(&types).len(), 1);
        // Moderate nesting is fine.
        let ok = format!("x = {}1{};", "(".repeat(60), ")".repeat(60));
        assert!(body_diags(&ok).is_empty());
        let ok_chain = format!("x = 1{};", " + 1".repeat(150));
        assert!(body_diags(&ok_chain).is_empty());
        // A flat chain costs a sixteenth of a level per link: 3 000 links fit.
        for link in [" + 1", " && b", ".f", ".m()"] {
            let long = format!("x = a{};", link.repeat(3000));
            assert!(body_diags(&long).is_empty(), "{link}");
        }
    });
}

#[test]
fn max_depth_fits_a_small_stack() {
    // Every construct at the depth limit fits in 4 MiB even in a debug build (the driver gives
    // the compiler 256 MiB); each case must hit the limit itself.
    let cases = [
        ("x = ", "(", ")"),
        ("x = ", "- ", ""),
        ("x = ", "f(", ")"),
        ("x = ", "a[", "]"),
        ("x = ", "c ? x : ", ""),
        ("x = ", "a + (", ")"),
        ("", "{", "}"),
        ("", "if (a) ", ""),
        ("", "while (a) ", ""),
        ("", "Vector<", ">"),
        ("x = ", "heap T(", ")"),
        ("x = ", "[", "]"),
        ("x = ", "switch (a) { default -> ", "; }"),
    ];
    for (pre, open, close) in cases {
        let src = format!(
            "class C {{ void m() {{ {pre}{}1{}; }} }}",
            // Past what a flat chain may reach too (`Vector < Vector < …` as comparisons).
            open.repeat(3300),
            close.repeat(3300)
        );
        let d = on_stack(4, move || parse(0, &src).1);
        assert!(
            d.iter().any(|d| d.message.contains("nesting too deep")),
            "{open}: {d:?}"
        );
    }
    let src = format!("@A({}1{}) class C {{ }}", "{".repeat(300), "}".repeat(300));
    let d = on_stack(4, move || parse(0, &src).1);
    assert!(
        d.iter().any(|d| d.message.contains("nesting too deep")),
        "{d:?}"
    );
}

fn on_stack<T: Send + 'static>(mib: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(mib << 20)
        .spawn(f)
        .map(|h| h.join())
        .unwrap_or_else(|e| panic!("spawn: {e}"))
        .unwrap_or_else(|_| panic!("parser thread panicked"))
}
