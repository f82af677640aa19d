//! The built-in library as the checker sees it: library class names and packages (XPU §1,
//! LANGUAGE §5.1), `System.stdout/stderr` printing with the `{}` format form (§5.9), `Math`
//! (XPU §2.12) and our `Cajeta.parseInt` extension (docs/spec-decisions.md).

use super::collect::Program;
use super::expr::typed_op;
use super::func::{FnBuilder, Loc, Own, Reg, Val};
use super::ty::{self, Num, Ty};
use crate::ast::{Arg, Expr, ExprKind, Ident};
use crate::diag::{code, Span};
use cajeta_bytecode::{MathFn, Op, Scalar, Type};

/// A class of the built-in library.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum LibClass {
    /// `String`.
    String,
    /// `System`.
    System,
    /// `Math`.
    Math,
    /// `Cajeta`.
    Cajeta,
    /// `Vector`.
    Vector,
    /// `Shared`.
    Shared,
    /// `Barrier`.
    Barrier,
    /// `cajeta.xpu.KernelBuffer`.
    KernelBuffer,
    /// `cajeta.xpu.KernelStream`.
    KernelStream,
    /// `cajeta.xpu.KernelThread`.
    KernelThread,
    /// `cajeta.xpu.Workgroup`.
    Workgroup,
    /// `cajeta.xpu.Wave`.
    Wave,
    /// `cajeta.xpu.Device`.
    Device,
    /// `cajeta.xpu.MemoryKind`.
    MemoryKind,
    /// `cajeta.xpu.MemoryOrder`.
    MemoryOrder,
    /// `cajeta.xpu.XpuLaunchException`.
    XpuLaunchException,
    /// `cajeta.xpu.Event` (T2).
    Event,
    /// `cajeta.xpu.Capability` (T2).
    Capability,
    /// `cajeta.xpu.Bits` (T2).
    Bits,
    /// `cajeta.xpu.KernelTimer` (T2): a class of the module, see [`Program::timer_class`].
    ///
    /// [`Program::timer_class`]: super::collect::Program::timer_class
    KernelTimer,
    /// `cajeta.xpu.KernelManifest` (T2): a class of the module, see
    /// [`Program::manifest_class`].
    ///
    /// [`Program::manifest_class`]: super::collect::Program::manifest_class
    KernelManifest,
}

impl LibClass {
    /// The simple name.
    pub fn name(self) -> &'static str {
        match self {
            LibClass::String => "String",
            LibClass::System => "System",
            LibClass::Math => "Math",
            LibClass::Cajeta => "Cajeta",
            LibClass::Vector => "Vector",
            LibClass::Shared => "Shared",
            LibClass::Barrier => "Barrier",
            LibClass::KernelBuffer => "KernelBuffer",
            LibClass::KernelStream => "KernelStream",
            LibClass::KernelThread => "KernelThread",
            LibClass::Workgroup => "Workgroup",
            LibClass::Wave => "Wave",
            LibClass::Device => "Device",
            LibClass::MemoryKind => "MemoryKind",
            LibClass::MemoryOrder => "MemoryOrder",
            LibClass::XpuLaunchException => "XpuLaunchException",
            LibClass::Event => "Event",
            LibClass::Capability => "Capability",
            LibClass::Bits => "Bits",
            LibClass::KernelTimer => "KernelTimer",
            LibClass::KernelManifest => "KernelManifest",
        }
    }
}

/// Names visible without an import (LANGUAGE §5.1; `Shared` and `Barrier` per XPU §1).
pub fn always_visible(name: &str) -> Option<LibClass> {
    Some(match name {
        "String" => LibClass::String,
        "System" => LibClass::System,
        "Math" => LibClass::Math,
        "Cajeta" => LibClass::Cajeta,
        "Vector" => LibClass::Vector,
        "Shared" => LibClass::Shared,
        "Barrier" => LibClass::Barrier,
        _ => return None,
    })
}

/// Library classes of a later tier (XPU.md §2.14; LANGUAGE.md §2, `Matrix`/`Quaternion`):
/// naming one is `CAJETA_ERROR_NOT_IMPLEMENTED`, not an unknown name.
pub fn later_tier_class(name: &str) -> bool {
    // Textures, images and samplers come in many shapes (`Texture1D`, `Texture2DArray`,
    // `TextureCube`, `TextureFormat`, `Image2D`, `SamplerState`, …); a name that merely starts
    // like one (`ImageData`) stays an unknown name.
    let graphics = |prefix: &str| {
        name.strip_prefix(prefix).is_some_and(|rest| {
            rest.is_empty()
                || rest.starts_with(|c: char| c.is_ascii_digit())
                || ["Array", "Cube", "Format", "State", "Filter", "Address"]
                    .iter()
                    .any(|s| rest.starts_with(s))
        })
    };
    graphics("Texture")
        || graphics("Image")
        || graphics("Sampler")
        || matches!(
            name,
            "Fence"
                | "Group"
                | "GroupOp"
                | "Quad"
                | "CooperativeMatrix"
                | "Tile"
                | "WaveVector"
                | "AsyncCopy"
                | "CoopStage"
                | "AccelerationStructure"
                | "RayQuery"
                | "Autotune"
                | "Spec"
                | "Debug"
                | "Scheduler"
                | "Matrix"
                | "Quaternion"
        )
}

/// Members of T1 library classes that belong to a later tier (XPU.md §2.14, LANGUAGE.md §5.9).
pub fn later_tier_member(class: &str, member: &str) -> bool {
    matches!(
        (class, member),
        ("KernelThread", "clock")
            | ("Workgroup", "reduce")
            | ("KernelBuffer", "wordView")
            | ("Wave", "reduceSumF32Segmented" | "reduceMaxF32Segmented")
            | ("System", "stdin" | "env" | "property")
    )
}

/// The message of a later-tier construct.
pub fn later_tier(what: &str) -> String {
    format!("{what} is not implemented")
}

/// A hint for an unknown simple name that is a `cajeta.xpu` class needing an import: the
/// most common first mistake (`KernelBuffer` used without `import cajeta.xpu.KernelBuffer;`).
/// Empty otherwise, so callers append it to their message.
pub fn import_hint(name: &str) -> String {
    match library_class(&format!("cajeta.xpu.{name}")) {
        Some(_) => format!(" (it is cajeta.xpu.{name}: add 'import cajeta.xpu.{name};')"),
        None => String::new(),
    }
}

/// The `cajeta.xpu` package and its `cajeta.xpu.core` alias.
pub fn is_library_package(p: &str) -> bool {
    matches!(p, "cajeta.xpu" | "cajeta.xpu.core" | "cajeta.lang")
}

/// Resolves a fully qualified library class name (XPU §1, with the `core` aliases).
pub fn library_class(q: &str) -> Option<LibClass> {
    let (pkg, name) = q.rsplit_once('.')?;
    // The always-visible names live in `cajeta.lang` upstream; importing them is harmless.
    if pkg == "cajeta.lang" {
        return always_visible(name).filter(|c| !matches!(c, LibClass::Shared | LibClass::Barrier));
    }
    let core = pkg == "cajeta.xpu.core";
    if pkg != "cajeta.xpu" && !core {
        return None;
    }
    Some(match name {
        "KernelBuffer" => LibClass::KernelBuffer,
        "Buffer" if core => LibClass::KernelBuffer,
        "KernelStream" => LibClass::KernelStream,
        "Stream" if core => LibClass::KernelStream,
        "KernelThread" => LibClass::KernelThread,
        "Thread" if core => LibClass::KernelThread,
        "Workgroup" => LibClass::Workgroup,
        "Barrier" => LibClass::Barrier,
        "Shared" => LibClass::Shared,
        "Wave" => LibClass::Wave,
        "Device" => LibClass::Device,
        "MemoryKind" => LibClass::MemoryKind,
        "MemoryOrder" => LibClass::MemoryOrder,
        "XpuLaunchException" => LibClass::XpuLaunchException,
        "Event" => LibClass::Event,
        "Capability" => LibClass::Capability,
        "Bits" => LibClass::Bits,
        "KernelTimer" => LibClass::KernelTimer,
        "KernelManifest" => LibClass::KernelManifest,
        _ => return None,
    })
}

/// A type's Cajeta spelling for messages.
pub fn ty_name(p: &Program, t: &Ty) -> String {
    match t {
        Ty::Prim(s) => s.name().to_string(),
        Ty::Str => "String".into(),
        Ty::Array(e) => format!("{}[]", ty_name(p, e)),
        // The library types' classes read as the library names (`KernelTimer`).
        Ty::Class(c) if p.is_library_class(*c) => p.classes[*c as usize].name.clone(),
        Ty::Class(c) => p.classes[*c as usize].qual.clone(),
        Ty::Buffer(s) => format!("KernelBuffer<{}>", s.name()),
        Ty::Stream => "KernelStream".into(),
        Ty::Event => "Event".into(),
        Ty::Shared(s) => format!("Shared<{}>", s.name()),
        Ty::Enum(e) => e.name().into(),
        Ty::Vector(s, n) => format!("Vector<{},{n}>", s.name()),
        Ty::Null => "null".into(),
        Ty::Void => "void".into(),
        Ty::Error => "<error>".into(),
    }
}

impl FnBuilder<'_> {
    /// `System.stdout.println(…)` and friends; `None` if `target` is not `System.<stream>`.
    pub fn system_stream_call(
        &mut self,
        target: &Expr,
        name: &Ident,
        args: &[Arg],
        span: Span,
    ) -> Option<Val> {
        let ExprKind::Field {
            target: sys,
            name: stream,
        } = &target.kind
        else {
            return None;
        };
        let ExprKind::Name(sys_name) = &sys.kind else {
            return None;
        };
        if sys_name.name != "System" || self.lookup_local("System").is_some() {
            return None;
        }
        let stderr = match stream.name.as_str() {
            "stdout" => false,
            "stderr" => true,
            later if later_tier_member("System", later) => {
                self.error(
                    code::NOT_IMPLEMENTED,
                    sys.span.to(stream.span),
                    later_tier(&format!("'System.{later}'")),
                );
                return Some(Val::error());
            }
            _ => {
                self.error(
                    code::UNKNOWN_SYSTEM_STREAM,
                    stream.span,
                    format!(
                        "unknown system stream 'System.{}' (use System.stdout or System.stderr)",
                        stream.name
                    ),
                );
                return Some(Val::error());
            }
        };
        if self.device {
            self.error(
                code::XPU_N01,
                span,
                "printing is not available in device code",
            );
            return Some(Val::error());
        }
        let newline = match name.name.as_str() {
            "println" => true,
            "print" => false,
            _ => {
                self.error(
                    code::UNRESOLVED_METHOD,
                    name.span,
                    format!("unknown method '{}' of a system stream", name.name),
                );
                return Some(Val::error());
            }
        };
        if let Some(a) = args.iter().find(|a| a.name.is_some()) {
            self.error(
                code::NAMEDARG,
                a.value.span,
                "printing takes no named arguments",
            );
            return Some(Val::error());
        }
        let vals = self.eval_args(args);
        if vals.iter().any(|v| v.ty == Ty::Error) {
            return Some(Val::error());
        }
        let text = match vals.len() {
            0 => {
                if !newline {
                    self.error(code::UNRESOLVED_METHOD, span, "print() needs an argument");
                    return Some(Val::error());
                }
                Some(self.load_str(""))
            }
            1 => self.printable(&vals[0], args[0].value.span),
            _ => self.format(&vals, args, span),
        };
        let Some(text) = text else {
            return Some(Val::error());
        };
        let flags = stderr as u16 | (newline as u16) << 1;
        self.set_pos(span);
        self.emit(Op::Print, text, flags, 0);
        Some(Val {
            ty: Ty::Void,
            loc: Loc::None,
            untyped: false,
            own: Own::No,
        })
    }

    /// A primitive or String argument of print, converted to a String register.
    fn printable(&mut self, v: &Val, span: Span) -> Option<Reg> {
        match &v.ty {
            Ty::Prim(_) | Ty::Str | Ty::Null | Ty::Enum(_) => self.stringify(v, span),
            Ty::Void => {
                self.error(
                    code::UNRESOLVED_EXPRESSION,
                    span,
                    "a void call has no value",
                );
                None
            }
            t => {
                let n = self.ty_name(t);
                self.error(
                    code::TYPE_MISMATCH,
                    span,
                    format!("cannot print a value of type {n}"),
                );
                None
            }
        }
    }

    /// The format form `println(fmt, a1, …)`: `{}` and `{:.N}` placeholders, `{{`/`}}`.
    fn format(&mut self, vals: &[Val], args: &[Arg], span: Span) -> Option<Reg> {
        let Loc::Str(fmt) = &vals[0].loc else {
            if vals[0].ty != Ty::Str {
                let n = self.ty_name(&vals[0].ty);
                self.error(
                    code::TYPE_MISMATCH,
                    args[0].value.span,
                    format!("the format must be a String, found {n}"),
                )
            } else {
                return self.format_dynamic(vals, args, span);
            }
            return None;
        };
        let fmt = fmt.clone();
        let mut pieces: Vec<Reg> = vec![];
        let mut lit = String::new();
        let mut next = 1;
        let chars: Vec<char> = fmt.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '{' && chars.get(i + 1) == Some(&'{') {
                lit.push('{');
                i += 2;
                continue;
            }
            if c == '}' && chars.get(i + 1) == Some(&'}') {
                lit.push('}');
                i += 2;
                continue;
            }
            if c == '{' {
                let close = chars[i..].iter().position(|&x| x == '}').map(|p| p + i);
                let spec: Option<String> = close.map(|e| chars[i + 1..e].iter().collect());
                let decimals = match spec.as_deref() {
                    Some("") => Some(None),
                    Some(s)
                        if s.starts_with(":.")
                            && s.len() > 2
                            && s[2..].chars().all(|d| d.is_ascii_digit()) =>
                    {
                        // The spec names 0..17; larger counts are accepted like C's %.Nf.
                        s[2..].parse::<u16>().ok().filter(|n| *n <= 340).map(Some)
                    }
                    _ => None,
                };
                if let (Some(dec), Some(e)) = (decimals, close) {
                    if !lit.is_empty() {
                        let r = self.load_str(&std::mem::take(&mut lit));
                        pieces.push(r);
                    }
                    let piece = if next < vals.len() {
                        let v = vals[next].clone();
                        let aspan = args[next].value.span;
                        next += 1;
                        match dec {
                            None => self.printable(&v, aspan)?,
                            Some(n) => self.fixed(&v, n, aspan)?,
                        }
                    } else {
                        self.load_str("null")
                    };
                    pieces.push(piece);
                    i = e + 1;
                    continue;
                }
            }
            lit.push(c);
            i += 1;
        }
        if !lit.is_empty() || pieces.is_empty() {
            let r = self.load_str(&lit);
            pieces.push(r);
        }
        self.set_pos(span);
        let mut acc = pieces[0];
        for &p in &pieces[1..] {
            acc = self.def(Op::Concat, Type::Str, acc, p);
        }
        Some(acc)
    }

    /// The format form with a format string known only at run time: each argument's string
    /// conversion and float64 value go to two arrays that `str.format` reads.
    fn format_dynamic(&mut self, vals: &[Val], args: &[Arg], span: Span) -> Option<Reg> {
        let fmt = self.materialize(&vals[0])?;
        let n = vals.len() - 1;
        let len = self.load_bits(Type::I64, n as u64);
        let strs_ty = Ty::Array(Box::new(Ty::Str)).reg();
        let vals_ty = Ty::Array(Box::new(Ty::Prim(Scalar::F64))).reg();
        let base = self.window(&[strs_ty, vals_ty]);
        self.emit(Op::NewArr, base, len, 0);
        self.emit(Op::NewArr, base + 1, len, 0);
        for (j, v) in vals[1..].iter().enumerate() {
            let aspan = args[j + 1].value.span;
            let text = self.printable(v, aspan)?;
            let num = match v.ty.scalar() {
                Some(s) if s.is_numeric() => {
                    let r = self.materialize(v)?;
                    self.convert(r, s, Scalar::F64)
                }
                _ => self.load_bits(Type::F64, f64::NAN.to_bits()),
            };
            let idx = self.load_bits(Type::I64, j as u64);
            self.emit(Op::ArrSetRef, base, idx, text);
            self.emit(Op::ArrSetF64, base + 1, idx, num);
        }
        self.set_pos(span);
        let out = self.def(Op::Format, Type::Str, fmt, base);
        // The argument arrays are temporaries of this statement.
        let yes = self.load_bool(true);
        self.emit(Op::Drop, base, yes, 0);
        self.emit(Op::Drop, base + 1, yes, 0);
        Some(out)
    }

    /// `{:.N}` of a numeric value.
    fn fixed(&mut self, v: &Val, n: u16, span: Span) -> Option<Reg> {
        match v.ty.scalar() {
            // An integer's value is exact in decimal (§5.9: correctly rounded from its binary
            // value), also beyond float64's 2^53: its digits and `n` zeros.
            Some(s) if s.is_int() => {
                let digits = self.printable(v, span)?;
                if n == 0 {
                    return Some(digits);
                }
                let zeros = self.load_str(&format!(".{}", "0".repeat(usize::from(n))));
                Some(self.def(Op::Concat, Type::Str, digits, zeros))
            }
            Some(s) if s.is_numeric() => {
                let r = self.materialize(v)?;
                let f = self.convert(r, s, Scalar::F64);
                Some(self.def(Op::FmtFixed, Type::Str, f, n))
            }
            _ => self.printable(v, span),
        }
    }

    /// Static calls on library classes.
    pub fn lib_call(
        &mut self,
        lib: super::builtins::LibClass,
        _target: &Expr,
        name: &Ident,
        args: &[Arg],
        span: Span,
    ) -> Val {
        if matches!(lib, LibClass::Bits | LibClass::Cajeta) {
            if let Some(v) = self.bits_call(lib, name, args, span) {
                return v;
            }
        }
        match lib {
            LibClass::Math => self.math_call(name, args, span),
            LibClass::Cajeta if name.name == "parseInt" => {
                // Our extension (docs/spec-decisions.md): a decimal int64 from a String.
                let vals = self.eval_args(args);
                if vals.len() != 1 || args[0].name.is_some() {
                    self.error(
                        code::UNRESOLVED_METHOD,
                        span,
                        "Cajeta.parseInt takes one String",
                    );
                    return Val::error();
                }
                if !self.host_only("Cajeta.parseInt", span) {
                    return Val::error();
                }
                let Some(r) = self.coerce(vals[0].clone(), &Ty::Str, args[0].value.span) else {
                    return Val::error();
                };
                self.set_pos(span);
                let d = self.def(Op::ParseInt, Type::I64, r, 0);
                Val::reg(Ty::Prim(Scalar::I64), d)
            }
            LibClass::System => self.system_call(name, args, span),
            _ => {
                let _ = self.eval_args(args);
                self.unknown_lib_member(lib.name(), name, span);
                Val::error()
            }
        }
    }

    /// Reports `class.name`, a static member the library class does not have:
    /// `CAJETA_ERROR_NOT_IMPLEMENTED` at the construct for a later-tier one
    /// ([`later_tier_member`]), else `CAJETA_ERROR_UNRESOLVED_METHOD` at the name.
    pub(super) fn unknown_lib_member(&mut self, class: &str, name: &Ident, span: Span) {
        let n = &name.name;
        if later_tier_member(class, n) {
            let what = format!("'{class}.{n}'");
            self.error(code::NOT_IMPLEMENTED, span, later_tier(&what));
        } else {
            let what = format!("{class} has no member '{n}'");
            self.error(code::UNRESOLVED_METHOD, name.span, what);
        }
    }

    fn math_call(&mut self, name: &Ident, args: &[Arg], span: Span) -> Val {
        let vals = self.eval_args(args);
        if vals.iter().any(|v| v.ty == Ty::Error) {
            return Val::error();
        }
        if let Some(a) = args.iter().find(|a| a.name.is_some()) {
            self.error(
                code::NAMEDARG,
                a.value.span,
                "Math functions take no named arguments",
            );
            return Val::error();
        }
        if vals.iter().any(|v| matches!(v.ty, Ty::Vector(..))) {
            return self.math_lanes(name, vals, args, span);
        }
        self.math_vals(name, vals, args, span)
    }

    /// A `Math` function of evaluated scalar arguments (`args` gives their spans).
    pub(super) fn math_vals(
        &mut self,
        name: &Ident,
        vals: Vec<Val>,
        args: &[Arg],
        span: Span,
    ) -> Val {
        for (v, a) in vals.iter().zip(args) {
            if !v.ty.is_numeric() {
                let n = self.ty_name(&v.ty);
                self.error(
                    code::TYPE_MISMATCH,
                    a.value.span,
                    format!("Math.{} needs numeric arguments, found {n}", name.name),
                );
                return Val::error();
            }
        }
        let arity = |want: usize, this: &mut Self| {
            if vals.len() != want {
                this.error(
                    code::UNRESOLVED_METHOD,
                    span,
                    format!("Math.{} takes {want} argument(s)", name.name),
                );
                false
            } else {
                true
            }
        };
        let n = name.name.as_str();
        match n {
            "abs" | "min" | "max" | "clamp" => {
                let want = match n {
                    "abs" => 1,
                    "clamp" => 3,
                    _ => 2,
                };
                if !arity(want, self) {
                    return Val::error();
                }
                // Promote all operands, as a binary operator does (LANGUAGE §3.3, §3.4): an
                // untyped constant adopts the typed operands' type when its value fits it, and
                // otherwise keeps its own (`Math.max(u8, 300)` is the int32 300).
                let own = |v: &Val| v.ty.scalar().unwrap_or(Scalar::I32);
                let typed = vals
                    .iter()
                    .filter(|v| !v.untyped)
                    .map(own)
                    .reduce(ty::promote);
                let operand: Vec<Scalar> = vals
                    .iter()
                    .map(|v| match typed {
                        Some(base) if v.untyped => Self::adopt(v, base),
                        _ => own(v),
                    })
                    .collect();
                let mut t = operand
                    .iter()
                    .copied()
                    .reduce(ty::promote)
                    .unwrap_or(Scalar::I32);
                // float16/bfloat16 are computed in float32 (LANGUAGE §4), as by an operator.
                if t.is_half() {
                    t = Scalar::F32;
                }
                // Mixed signedness orders like a comparison: signed if either side is signed.
                let any_signed = vals
                    .iter()
                    .zip(&operand)
                    .any(|(v, s)| s.is_signed() && !(v.untyped && typed == Some(*s)));
                let w = if t.is_int() && !t.is_signed() && any_signed {
                    super::expr::signed_of(t)
                } else {
                    t
                };
                let regs: Option<Vec<Reg>> = vals
                    .iter()
                    .zip(&operand)
                    .map(|(v, &adopted)| self.math_operand(v, adopted, t))
                    .collect();
                let Some(mut regs) = regs else {
                    return Val::error();
                };
                if w != t {
                    for r in regs.iter_mut() {
                        *r = self.convert(*r, t, w);
                    }
                }
                self.set_pos(span);
                let out = match n {
                    "abs" if t.is_float() => {
                        self.def(math1(t), Type::Scalar(t), regs[0], MathFn::Abs as u16)
                    }
                    "abs" if t.is_signed() => self.def(
                        typed_op("abs", t).expect("abs"),
                        Type::Scalar(t),
                        regs[0],
                        0,
                    ),
                    "abs" => regs[0],
                    "min" => self.def(
                        typed_op("min", w).expect("min"),
                        Type::Scalar(w),
                        regs[0],
                        regs[1],
                    ),
                    "max" => self.def(
                        typed_op("max", w).expect("max"),
                        Type::Scalar(w),
                        regs[0],
                        regs[1],
                    ),
                    _ => {
                        let lo = self.def(
                            typed_op("max", w).expect("max"),
                            Type::Scalar(w),
                            regs[0],
                            regs[1],
                        );
                        self.def(
                            typed_op("min", w).expect("min"),
                            Type::Scalar(w),
                            lo,
                            regs[2],
                        )
                    }
                };
                let out = self.convert(out, w, t);
                Val::reg(Ty::Prim(t), out)
            }
            "pow" | "atan2" | "fma" => {
                let want = if n == "fma" { 3 } else { 2 };
                if !arity(want, self) {
                    return Val::error();
                }
                let t = float_result(&vals);
                let regs: Option<Vec<Reg>> = vals
                    .iter()
                    .map(|v| self.math_operand(v, v.ty.scalar().unwrap_or(t), t))
                    .collect();
                let Some(regs) = regs else {
                    return Val::error();
                };
                self.set_pos(span);
                let out = if n == "fma" {
                    let d = self.temp(Type::Scalar(t));
                    self.emit(Op::Mov, d, regs[0], 0);
                    self.emit(typed_op("fma", t).expect("fma"), d, regs[1], regs[2]);
                    d
                } else {
                    self.def(
                        typed_op(n, t).expect("pow/atan2"),
                        Type::Scalar(t),
                        regs[0],
                        regs[1],
                    )
                };
                Val::reg(Ty::Prim(t), out)
            }
            _ => {
                let Some(f) = MathFn::by_name(n) else {
                    self.error(
                        code::UNRESOLVED_METHOD,
                        name.span,
                        format!("unknown function 'Math.{n}'"),
                    );
                    return Val::error();
                };
                if !arity(1, self) {
                    return Val::error();
                }
                let t = float_result(&vals);
                let own = vals[0].ty.scalar().unwrap_or(t);
                let Some(r) = self.math_operand(&vals[0], own, t) else {
                    return Val::error();
                };
                self.set_pos(span);
                let d = self.def(math1(t), Type::Scalar(t), r, f as u16);
                Val::reg(Ty::Prim(t), d)
            }
        }
    }

    /// Operand `v` of a `Math` function computed in `t`; a constant takes the type it
    /// `adopted` first (`Math.max(h, 70000)` with a float16 `h`: the float16 infinity).
    fn math_operand(&mut self, v: &Val, adopted: Scalar, t: Scalar) -> Option<Reg> {
        if let Some(n) = v.num() {
            let own = if v.untyped { adopted } else { v.ty.scalar()? };
            let cell = ty::const_cell(n, own);
            return Some(
                self.load_bits(Type::Scalar(t), ty::const_cell(ty::cell_num(cell, own), t)),
            );
        }
        let r = self.materialize(v)?;
        let s = v.ty.scalar()?;
        Some(self.convert(r, s, t))
    }
}

/// Float functions: a float argument keeps its type (float16/bfloat16: float32); integers become
/// float64.
fn float_result(vals: &[Val]) -> Scalar {
    let mut t: Option<Scalar> = None;
    for v in vals {
        let s = v.ty.scalar().unwrap_or(Scalar::F64);
        let s = if s.is_float() && !(v.untyped && vals.iter().any(|o| !o.untyped)) {
            s
        } else if s.is_float() {
            continue;
        } else {
            Scalar::F64
        };
        t = Some(match t {
            None => s,
            Some(a) => ty::promote(a, s),
        });
    }
    let _ = Num::Int(0);
    // float16/bfloat16 arguments are computed in float32 (LANGUAGE §4).
    match t {
        Some(s) if s.is_half() => Scalar::F32,
        t => t.unwrap_or(Scalar::F64),
    }
}

fn math1(t: Scalar) -> Op {
    if t == Scalar::F32 {
        Op::Math1F32
    } else {
        Op::Math1F64
    }
}

impl FnBuilder<'_> {
    /// `System.exit(int32)`, `System.currentTimeMillis()`, `System.nanoTime()` (T2).
    fn system_call(&mut self, name: &Ident, args: &[Arg], span: Span) -> Val {
        let vals = self.eval_args(args);
        if vals.iter().any(|v| v.ty == Ty::Error) || !self.host_only("System", span) {
            return Val::error();
        }
        let n = name.name.as_str();
        match (n, vals.len()) {
            ("exit", 1) => {
                let Some(r) =
                    self.coerce(vals[0].clone(), &Ty::Prim(Scalar::I32), args[0].value.span)
                else {
                    return Val::error();
                };
                self.set_pos(span);
                self.emit(Op::SysExit, r, 0, 0);
                Val {
                    ty: Ty::Void,
                    loc: Loc::None,
                    untyped: false,
                    own: Own::No,
                }
            }
            ("currentTimeMillis" | "nanoTime", 0) => {
                let d = self.def(Op::SysTime, Type::I64, (n == "nanoTime") as u16, 0);
                Val::reg(Ty::Prim(Scalar::I64), d)
            }
            (later, _) if later_tier_member("System", later) => {
                self.error(
                    code::NOT_IMPLEMENTED,
                    span,
                    later_tier(&format!("'System.{later}'")),
                );
                Val::error()
            }
            // A known method with other arguments.
            ("exit" | "currentTimeMillis" | "nanoTime", _) => {
                self.error(
                    code::UNRESOLVED_METHOD,
                    name.span,
                    format!(
                        "System has no method '{n}' taking {} argument(s)",
                        vals.len()
                    ),
                );
                Val::error()
            }
            // Any other member (LANGUAGE §5.9: `System.out`).
            _ => {
                self.error(
                    code::UNKNOWN_SYSTEM_STREAM,
                    name.span,
                    format!(
                        "'System.{n}' is not a known member (use System.stdout or System.stderr)"
                    ),
                );
                Val::error()
            }
        }
    }

    /// String methods (T2): `count()` (code points), `size()` (UTF-8 bytes), `equals(String)`.
    pub fn string_method(&mut self, recv: &Val, name: &Ident, args: &[Arg], span: Span) -> Val {
        let vals = self.eval_args(args);
        let Some(r) = self.materialize(recv) else {
            return Val::error();
        };
        match (name.name.as_str(), vals.as_slice()) {
            (m @ ("count" | "size"), []) => {
                self.set_pos(span);
                let op = if m == "count" {
                    Op::StrCount
                } else {
                    Op::StrSize
                };
                let d = self.def(op, Type::I64, r, 0);
                Val::reg(Ty::Prim(Scalar::I64), d)
            }
            ("equals", [other]) => {
                let Some(o) = self.coerce(other.clone(), &Ty::Str, args[0].value.span) else {
                    return Val::error();
                };
                // A call through null is E-NULL (§8.4), where `==` would compare: `size()`
                // checks the receiver.
                self.set_pos(span);
                let _ = self.def(Op::StrSize, Type::I64, r, 0);
                let d = self.def(Op::EqStr, Type::BOOL, r, o);
                Val::reg(Ty::BOOL, d)
            }
            _ => {
                self.error(
                    code::UNRESOLVED_METHOD,
                    name.span,
                    format!(
                        "String has no method '{}' taking {} argument(s)",
                        name.name,
                        vals.len()
                    ),
                );
                Val::error()
            }
        }
    }
}
