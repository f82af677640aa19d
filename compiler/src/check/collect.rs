//! Declaration collection: the program's classes, fields, statics and method signatures, the
//! static-initialisation order and the default entry point (LANGUAGE §5).

use super::builtins::{self, LibClass};
use super::ty::Ty;
use super::{Access, MethodSig};
use crate::ast::{self, Member, PrimType, TypeArg, TypeExpr, TypeKind, Unit};
use crate::diag::{code, Diag, Span};
use cajeta_bytecode::{FnKind, Function, Scalar};
use std::collections::HashMap;

/// An instance field.
#[derive(Clone, Debug)]
pub struct FieldInfo {
    /// Name.
    pub name: String,
    /// Type.
    pub ty: Ty,
    /// `final`.
    pub is_final: bool,
    /// Access.
    pub access: Access,
}

/// The hidden field of a class with owning fields that marks an instance whose drop has begun
/// (see `FnBuilder::emit_drop`).
pub const DROPPING_FIELD: &str = "$dropping";

/// A static field.
#[derive(Clone, Debug)]
pub struct StaticInfo {
    /// Simple name.
    pub name: String,
    /// `pkg.Class.name`.
    pub qual: String,
    /// Type.
    pub ty: Ty,
    /// Declaring class.
    pub class: u32,
    /// `final`.
    pub is_final: bool,
    /// Access.
    pub access: Access,
}

/// A class of the program.
#[derive(Clone, Debug)]
pub struct ClassInfo {
    /// Simple name.
    pub name: String,
    /// `pkg.Class`.
    pub qual: String,
    /// Package (empty for the unnamed package).
    pub package: String,
    /// The unit declaring it.
    pub unit: usize,
    /// Its index among the unit's classes.
    pub index: usize,
    /// Instance fields in order.
    pub fields: Vec<FieldInfo>,
    /// Static fields: indices into [`Program::statics`].
    pub statics: Vec<u32>,
    /// Methods.
    pub methods: Vec<MethodSig>,
    /// Constructors (an implicit one if none is declared).
    pub ctors: Vec<MethodSig>,
    /// Access of the class (`public` or package).
    pub public: bool,
    /// The hidden drop function (`pkg.Class.~Class`): runs the destructor, then drops what the
    /// fields own, last field first. Only for classes with a destructor or owning fields.
    pub drop_fn: Option<u32>,
}

/// What one bytecode function's body is made from.
#[derive(Clone, Debug)]
pub enum JobKind {
    /// A method: (unit, class index in unit, member index).
    Method(usize, usize, usize),
    /// A constructor; `None` for the implicit one.
    Ctor(Option<(usize, usize, usize)>),
    /// The class's static initialiser.
    Clinit,
    /// The class's static finaliser: drops what its statics own, last first (§5.8 step 4).
    Clfini,
    /// The class's drop function: the destructor body (if any), then the owned fields' drops.
    Drop(Option<(usize, usize, usize)>),
}

/// A function body to lower.
#[derive(Clone, Debug)]
pub struct Job {
    /// Bytecode function index.
    pub func: u32,
    /// Owning class.
    pub class: u32,
    /// Which body.
    pub kind: JobKind,
    /// The signature (methods and constructors).
    pub sig: Option<MethodSig>,
}

/// Per-unit name environment.
#[derive(Clone, Debug, Default)]
pub struct UnitEnv {
    /// The package.
    pub package: String,
    /// Single-type imports: simple name → qualified name.
    pub single: HashMap<String, String>,
    /// Wildcard-imported packages.
    pub wildcards: Vec<String>,
}

/// A class reference: user or library.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum ClassRef {
    /// A class of the program.
    User(u32),
    /// A library class.
    Lib(LibClass),
}

/// Everything known about the program before bodies are lowered.
pub struct Program {
    /// Classes (index = bytecode class index).
    pub classes: Vec<ClassInfo>,
    /// Static fields (index = bytecode static index).
    pub statics: Vec<StaticInfo>,
    /// Function shells (bodies filled in by lowering).
    pub functions: Vec<Function>,
    /// Bodies to lower.
    pub jobs: Vec<Job>,
    /// `<clinit>` functions in initialisation order.
    pub init: Vec<u32>,
    /// `<clfini>` functions, in class order (they run in reverse).
    pub fini: Vec<u32>,
    /// The default entry point.
    pub entry: Option<u32>,
    /// Name environments per unit.
    pub envs: Vec<UnitEnv>,
    /// Warnings found while collecting (unknown annotations).
    pub warnings: Vec<Diag>,
    /// Hidden statics returning lanes `1…N−1` of a host function's vector result, by
    /// (element type, lane): see `vector.rs`.
    pub vret: HashMap<(Scalar, u8), u32>,
    /// The class standing for `KernelTimer` (XPU §2.13): fields `$begin`, `$end` (int64 host
    /// clock readings, ns) and `$state` (int32: [`TIMER_BEGUN`] | [`TIMER_ENDED`] |
    /// [`TIMER_DESTROYED`]), which no source name can reach. Follows the user classes; the
    /// module keeps it only when used (`check::library_classes_kept`).
    pub timer_class: u32,
    /// The class standing for `KernelManifest` (XPU §2.13): public final fields
    /// `String kernel`, `String target`, `int32 waveWidth`; right after [`Self::timer_class`].
    pub manifest_class: u32,
    by_qual: HashMap<String, u32>,
}

/// `KernelTimer` state bit: `begin` has run (cleared by nothing but a new timer).
pub const TIMER_BEGUN: u64 = 1;
/// `KernelTimer` state bit: `end` has run since the last `begin`.
pub const TIMER_ENDED: u64 = 2;
/// `KernelTimer` state bit: `destroy` has run (the value `device.timerlive` tests).
pub const TIMER_DESTROYED: u64 = 4;
/// `KernelTimer` field indices (see [`Program::timer_class`]).
pub const TIMER_BEGIN_FIELD: u16 = 0;
/// The end mark's field.
pub const TIMER_END_FIELD: u16 = 1;
/// The state word's field.
pub const TIMER_STATE_FIELD: u16 = 2;

impl Program {
    /// Adds hidden host function `name` of class `ci` (a drop function, `<clinit>` or
    /// `<clfini>`), whose body `kind` lowers; returns its index.
    fn hidden_fn(&mut self, name: String, ci: usize, kind: JobKind, file: u32) -> u32 {
        let func = self.functions.len() as u32;
        self.functions.push(shell(name, FnKind::Host, file));
        self.jobs.push(Job {
            func,
            class: ci as u32,
            kind,
            sig: None,
        });
        func
    }

    /// Resolves a simple type name in a unit (LANGUAGE §5.1).
    pub fn lookup_class(&self, unit: usize, name: &str) -> Option<ClassRef> {
        let env = &self.envs[unit];
        let same = if env.package.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", env.package)
        };
        if let Some(&c) = self.by_qual.get(&same) {
            return Some(ClassRef::User(c));
        }
        if let Some(q) = env.single.get(name) {
            return self.lookup_qualified(q);
        }
        match self.wildcard_matches(unit, name).as_slice() {
            [] => builtins::always_visible(name).map(ClassRef::Lib),
            [one] => Some(*one),
            // Supplied by two wildcard imports: ambiguous (see `is_ambiguous`).
            _ => None,
        }
    }

    fn wildcard_matches(&self, unit: usize, name: &str) -> Vec<ClassRef> {
        let mut found: Vec<ClassRef> = vec![];
        for w in &self.envs[unit].wildcards {
            if let Some(c) = self.lookup_qualified(&format!("{w}.{name}")) {
                if !found.contains(&c) {
                    found.push(c);
                }
            }
        }
        found
    }

    /// True if a simple name is supplied by two wildcard imports (and nothing closer).
    pub fn is_ambiguous(&self, unit: usize, name: &str) -> bool {
        self.wildcard_matches(unit, name).len() > 1
    }

    /// Resolves a fully qualified class name.
    pub fn lookup_qualified(&self, q: &str) -> Option<ClassRef> {
        if let Some(&c) = self.by_qual.get(q) {
            return Some(ClassRef::User(c));
        }
        builtins::library_class(q).map(ClassRef::Lib)
    }

    /// Resolves a written type in a unit.
    pub fn resolve_type(&self, unit: usize, t: &TypeExpr) -> Result<Ty, Diag> {
        match &t.kind {
            TypeKind::Prim(p) => prim_type(*p, t.span),
            TypeKind::Array(inner) => {
                let e = self.resolve_type(unit, inner)?;
                if matches!(e, Ty::Vector(..)) {
                    return Err(Diag::error(
                        code::NOT_IMPLEMENTED,
                        t.span,
                        "arrays of Vectors are not implemented (use vload/vstore on a scalar array)",
                    ));
                }
                // `T[][]` (T2) is an array of `T[]` references, each element owning its row.
                Ok(Ty::Array(Box::new(e)))
            }
            TypeKind::Named { name, args } => {
                let text = name.joined();
                if name.parts.len() == 1 && text == "bfloat16" {
                    return Ok(Ty::Prim(Scalar::BF16));
                }
                let class = if name.parts.len() == 1 {
                    self.lookup_class(unit, &text)
                } else {
                    self.lookup_qualified(&text)
                };
                let Some(class) = class else {
                    // Only a name that resolves to nothing of the program is a later-tier one.
                    let simple = name.parts.last().map_or("", |p| p.name.as_str());
                    if text == "pointer" || builtins::later_tier_class(simple) {
                        return Err(Diag::error(
                            code::NOT_IMPLEMENTED,
                            t.span,
                            builtins::later_tier(&format!("type '{text}'")),
                        ));
                    }
                    if name.parts.len() == 1 && self.is_ambiguous(unit, &text) {
                        return Err(Diag::error(
                            code::UNRESOLVED_TYPE,
                            t.span,
                            format!("'{text}' is ambiguous: two wildcard imports supply it"),
                        ));
                    }
                    return Err(Diag::error(
                        code::UNRESOLVED_TYPE,
                        t.span,
                        format!("unknown type '{text}'{}", builtins::import_hint(&text)),
                    ));
                };
                match class {
                    ClassRef::User(c) => {
                        if !args.is_empty() {
                            return Err(Diag::error(
                                code::TYPE_MISMATCH,
                                t.span,
                                format!("class '{text}' takes no type arguments"),
                            ));
                        }
                        Ok(Ty::Class(c))
                    }
                    ClassRef::Lib(lib) => self.lib_type(unit, lib, args, t.span),
                }
            }
        }
    }

    fn lib_type(
        &self,
        unit: usize,
        lib: LibClass,
        args: &[TypeArg],
        span: Span,
    ) -> Result<Ty, Diag> {
        let no_args = |ty: Ty| {
            if args.is_empty() {
                Ok(ty)
            } else {
                Err(Diag::error(
                    code::TYPE_MISMATCH,
                    span,
                    "this type takes no type arguments",
                ))
            }
        };
        match lib {
            LibClass::String => no_args(Ty::Str),
            LibClass::KernelStream => no_args(Ty::Stream),
            LibClass::Event => no_args(Ty::Event),
            LibClass::KernelTimer => no_args(Ty::Class(self.timer_class)),
            LibClass::KernelManifest => no_args(Ty::Class(self.manifest_class)),
            LibClass::MemoryKind => no_args(Ty::Enum(super::ty::EnumTy::MemoryKind)),
            LibClass::MemoryOrder => no_args(Ty::Enum(super::ty::EnumTy::MemoryOrder)),
            LibClass::Capability => no_args(Ty::Enum(super::ty::EnumTy::Capability)),
            LibClass::Shared => {
                let [TypeArg::Type(e)] = args else {
                    return Err(Diag::error(
                        code::TYPE_MISMATCH,
                        span,
                        "Shared takes exactly one element type",
                    ));
                };
                match self.resolve_type(unit, e)? {
                    Ty::Prim(s) if s.is_numeric() => Ok(Ty::Shared(s)),
                    other => Err(Diag::error(
                        code::TYPE_MISMATCH,
                        e.span,
                        format!(
                            "'{}' is not a shared element type",
                            builtins::ty_name(self, &other)
                        ),
                    )),
                }
            }
            LibClass::KernelBuffer => {
                let [TypeArg::Type(e)] = args else {
                    return Err(Diag::error(
                        code::TYPE_MISMATCH,
                        span,
                        "KernelBuffer takes exactly one element type",
                    ));
                };
                match self.resolve_type(unit, e)? {
                    Ty::Prim(s) if s.is_numeric() => Ok(Ty::Buffer(s)),
                    other => Err(Diag::error(
                        code::TYPE_MISMATCH,
                        e.span,
                        format!(
                            "'{}' is not a buffer element type",
                            builtins::ty_name(self, &other)
                        ),
                    )),
                }
            }
            LibClass::Vector => {
                // An argument of the wrong kind is the Vector code of its place (LANGUAGE §9).
                let arg_span = |a: &TypeArg| match a {
                    TypeArg::Type(t) => t.span,
                    TypeArg::Const(e) => e.span,
                };
                let (e, n) = match args {
                    [TypeArg::Type(e), TypeArg::Const(n)] => (e, n),
                    [TypeArg::Const(_), _] => {
                        return Err(Diag::error(
                            code::VECTOR_ELEMENT_TYPE,
                            arg_span(&args[0]),
                            "a Vector's first type argument is its element type: Vector<T,N>",
                        ))
                    }
                    [TypeArg::Type(_), second] => {
                        return Err(Diag::error(
                            code::VECTOR_LENGTH,
                            arg_span(second),
                            "a Vector's lane count is an integer constant: Vector<T,N>",
                        ))
                    }
                    [TypeArg::Type(_)] => {
                        return Err(Diag::error(
                            code::VECTOR_LENGTH,
                            span,
                            "a Vector needs a lane count: Vector<T,N>",
                        ))
                    }
                    _ => {
                        return Err(Diag::error(
                            code::TYPE_MISMATCH,
                            span,
                            "Vector takes an element type and a lane count: Vector<T,N>",
                        ))
                    }
                };
                let s = match self.resolve_type(unit, e)? {
                    // Numeric lanes, or boolean ones: a mask (`Vector<boolean,N>`).
                    Ty::Prim(s) if s.is_numeric() || s == Scalar::Bool => s,
                    other => {
                        return Err(Diag::error(
                            code::VECTOR_ELEMENT_TYPE,
                            e.span,
                            format!(
                                "'{}' is not a Vector element type (a numeric type)",
                                builtins::ty_name(self, &other)
                            ),
                        ))
                    }
                };
                let n = super::vector::lane_count(n)
                    .map_err(|m| Diag::error(code::VECTOR_LENGTH, n.span, m))?;
                Ok(Ty::Vector(s, n))
            }
            other => Err(Diag::error(
                code::NOT_IMPLEMENTED,
                span,
                format!("'{}' cannot be used as a type here yet", other.name()),
            )),
        }
    }

    /// True for the classes that stand for library types (`KernelTimer`, `KernelManifest`):
    /// no declaration, no methods, not POD.
    pub fn is_library_class(&self, c: u32) -> bool {
        c == self.timer_class || c == self.manifest_class
    }

    /// The qualified name of a class.
    pub fn class_name(&self, c: u32) -> &str {
        &self.classes[c as usize].qual
    }
}

/// `float16`/`bfloat16` scalars are implemented; containers of them (2-byte element storage)
/// are not yet.
fn prim_type(p: PrimType, span: Span) -> Result<Ty, Diag> {
    Ok(Ty::Prim(match p {
        PrimType::Bool => Scalar::Bool,
        PrimType::Char => Scalar::Char,
        PrimType::I8 => Scalar::I8,
        PrimType::U8 => Scalar::U8,
        PrimType::I16 => Scalar::I16,
        PrimType::U16 => Scalar::U16,
        PrimType::I32 => Scalar::I32,
        PrimType::U32 => Scalar::U32,
        PrimType::I64 => Scalar::I64,
        PrimType::U64 => Scalar::U64,
        PrimType::F32 => Scalar::F32,
        PrimType::F64 => Scalar::F64,
        PrimType::F16 => Scalar::F16,
        PrimType::Unsupported(name) => {
            return Err(Diag::error(
                code::NOT_IMPLEMENTED,
                span,
                format!("type '{name}' is not implemented"),
            ))
        }
    }))
}

/// Annotations with a meaning (LANGUAGE §5.6); others are ignored with a warning.
const KNOWN_ANNOTATIONS: &[&str] = &["Kernel", "Device", "Host", "FastMath", "Wave", "Occupancy"];

fn annotation_kind(anns: &[ast::Annotation]) -> FnKind {
    for a in anns {
        match a.name.joined().as_str() {
            "Kernel" => return FnKind::Kernel,
            "Device" => return FnKind::Device,
            _ => {}
        }
    }
    FnKind::Host
}

/// The rules of a `static native` method (our extension, `docs/spec-decisions.md`): static,
/// host-side, and only primitives and `String` cross the boundary.
fn native_signature_errors(
    md: &ast::MethodDecl,
    kind: FnKind,
    params: &[(String, Ty)],
    ret: &Ty,
) -> Vec<Diag> {
    let mut errors = Vec::new();
    let span = md.name.span;
    if !md.modifiers.is_static {
        // `native` is a T3 modifier (LANGUAGE §5.2); only its `static` form, for embedders'
        // host functions, is implemented.
        errors.push(Diag::error(
            code::NOT_IMPLEMENTED,
            span,
            format!(
                "native method '{}' is not static: only static native methods are implemented",
                md.name.name
            ),
        ));
    }
    if kind != FnKind::Host || !md.annotations.is_empty() {
        errors.push(Diag::error(
            code::SYNTAX,
            span,
            format!(
                "native method '{}' cannot be annotated (@Kernel, @Device and @Host do not apply)",
                md.name.name
            ),
        ));
    }
    let crosses = |t: &Ty| matches!(t, Ty::Prim(_) | Ty::Str | Ty::Error);
    for (name, t) in params {
        if !crosses(t) {
            errors.push(Diag::error(
                code::TYPE_MISMATCH,
                span,
                format!(
                    "parameter '{name}' of native method '{}' has type {}: only primitives and String cross to the host",
                    md.name.name,
                    t.reg()
                ),
            ));
        }
    }
    if !crosses(ret) && *ret != Ty::Void {
        errors.push(Diag::error(
            code::TYPE_MISMATCH,
            span,
            format!(
                "native method '{}' returns {}: only void, primitives and String cross from the host",
                md.name.name,
                ret.reg()
            ),
        ));
    }
    errors
}

fn shell(name: String, kind: FnKind, file: u32) -> Function {
    Function {
        name,
        kind,
        params: 0,
        ret: None,
        regs: vec![],
        code: vec![],
        file,
        lines: vec![],
        regions: vec![],
        locals: vec![],
        shared: vec![],
        inlined: vec![],
    }
}

/// Collects declarations from every unit.
pub fn collect(units: &[Unit]) -> Result<Program, Vec<Diag>> {
    let mut errors = Vec::new();
    let mut p = Program {
        classes: vec![],
        statics: vec![],
        functions: vec![],
        jobs: vec![],
        init: vec![],
        fini: vec![],
        entry: None,
        envs: vec![],
        warnings: vec![],
        vret: HashMap::new(),
        timer_class: u32::MAX,
        manifest_class: u32::MAX,
        by_qual: HashMap::new(),
    };
    for unit in units {
        let mut anns: Vec<&ast::Annotation> = unit.package_annotations.iter().collect();
        for c in &unit.classes {
            anns.extend(&c.annotations);
            for m in &c.members {
                match m {
                    Member::Method(md) => {
                        anns.extend(&md.annotations);
                        anns.extend(md.params.iter().flat_map(|p| &p.annotations));
                    }
                    Member::Field(f) => anns.extend(&f.annotations),
                    Member::Constructor(cd) => {
                        anns.extend(&cd.annotations);
                        anns.extend(cd.params.iter().flat_map(|p| &p.annotations));
                    }
                    Member::Destructor(d) => anns.extend(&d.annotations),
                    _ => {}
                }
            }
        }
        for a in anns {
            let n = a.name.joined();
            if !KNOWN_ANNOTATIONS.contains(&n.as_str()) {
                p.warnings.push(Diag::warning(
                    code::WARN_UNKNOWN_ANNOTATION,
                    a.span,
                    format!("unknown annotation '@{n}' is ignored"),
                ));
            }
        }
    }
    // Pass 1: class names and unit environments.
    for (ui, unit) in units.iter().enumerate() {
        let package = unit
            .package
            .as_ref()
            .map(|q| q.joined())
            .unwrap_or_default();
        let mut env = UnitEnv {
            package: package.clone(),
            ..Default::default()
        };
        for (ci, c) in unit.classes.iter().enumerate() {
            let qual = if package.is_empty() {
                c.name.name.clone()
            } else {
                format!("{package}.{}", c.name.name)
            };
            if p.by_qual.contains_key(&qual) {
                errors.push(Diag::error(
                    code::VARIABLE_DUPLICATE,
                    c.name.span,
                    format!("class '{qual}' is declared twice"),
                ));
                continue;
            }
            p.by_qual.insert(qual.clone(), p.classes.len() as u32);
            p.classes.push(ClassInfo {
                name: c.name.name.clone(),
                qual,
                package: package.clone(),
                unit: ui,
                index: ci,
                fields: vec![],
                statics: vec![],
                methods: vec![],
                ctors: vec![],
                public: c.modifiers.public,
                drop_fn: None,
            });
        }
        for imp in &unit.imports {
            let q = imp.path.joined();
            if imp.wildcard {
                env.wildcards.push(q);
            } else {
                let simple = imp
                    .path
                    .parts
                    .last()
                    .map(|p| p.name.clone())
                    .unwrap_or_default();
                env.single.insert(simple, q);
            }
        }
        p.envs.push(env);
    }
    library_classes(&mut p);
    // Imports must name something that exists, and one simple name one class.
    for unit in units {
        let mut singles: HashMap<String, String> = HashMap::new();
        for imp in &unit.imports {
            let q = imp.path.joined();
            if !imp.wildcard {
                let simple = q.rsplit('.').next().unwrap_or_default().to_string();
                // A library class and its `cajeta.xpu.core` alias are one class (XPU §1).
                let same = |first: &String| {
                    *first == q
                        || builtins::library_class(first)
                            .is_some_and(|a| builtins::library_class(&q) == Some(a))
                };
                match singles.get(&simple) {
                    Some(first) if !same(first) => {
                        errors.push(Diag::error(
                            code::UNRESOLVED_TYPE,
                            imp.path.span,
                            format!("'{simple}' is ambiguous: imported as '{first}' and as '{q}'"),
                        ));
                        continue;
                    }
                    _ => {
                        singles.insert(simple, q.clone());
                    }
                }
            }
            let ok = if imp.wildcard {
                builtins::is_library_package(&q) || p.classes.iter().any(|c| c.package == q)
            } else {
                p.lookup_qualified(&q).is_some()
            };
            let later = q.rsplit_once('.').is_some_and(|(pkg, name)| {
                pkg.starts_with("cajeta.") && builtins::later_tier_class(name)
            });
            if later {
                errors.push(Diag::error(
                    code::NOT_IMPLEMENTED,
                    imp.path.span,
                    builtins::later_tier(&format!("'{q}'")),
                ));
            } else if !ok {
                // Upstream's older name of the library (`cajeta.gpu.core.Buffer`).
                let renamed = q
                    .strip_prefix("cajeta.gpu")
                    .map(|rest| format!("cajeta.xpu{rest}"))
                    .filter(|x| {
                        if imp.wildcard {
                            builtins::is_library_package(x)
                        } else {
                            p.lookup_qualified(x).is_some()
                        }
                    });
                let star = if imp.wildcard { ".*" } else { "" };
                let hint = renamed
                    .map(|x| format!(" (the library is cajeta.xpu here: import {x}{star})"))
                    .unwrap_or_default();
                errors.push(Diag::error(
                    code::UNRESOLVED_TYPE,
                    imp.path.span,
                    format!("cannot resolve import '{q}'{hint}"),
                ));
            }
        }
    }
    // Pass 2: members. Kernel and device signatures are checked after it: a POD parameter's
    // class may come later in the program, its fields not collected yet.
    let mut device_signatures = vec![];
    for ci in 0..p.classes.len() {
        if p.is_library_class(ci as u32) {
            continue;
        }
        let (ui, idx) = (p.classes[ci].unit, p.classes[ci].index);
        let decl = &units[ui].classes[idx];
        let file = units[ui].file;
        let qual = p.classes[ci].qual.clone();
        let mut names: HashMap<String, Span> = HashMap::new();
        let mut has_static_init = false;
        let mut fields = vec![];
        let mut statics = vec![];
        for m in &decl.members {
            if let Member::Field(f) = m {
                let ty = match p.resolve_type(ui, &f.ty) {
                    Ok(t) => t,
                    Err(d) => {
                        errors.push(d);
                        Ty::Error
                    }
                };
                if matches!(ty, Ty::Shared(_)) {
                    errors.push(Diag::error(
                        code::XPU_K03,
                        f.ty.span,
                        "Shared<T> exists only inside a @Kernel body, not as a field",
                    ));
                }
                if matches!(ty, Ty::Vector(..)) {
                    errors.push(Diag::error(
                        code::NOT_IMPLEMENTED,
                        f.ty.span,
                        "Vector fields are not implemented (locals, parameters and results are)",
                    ));
                }
                for (name, init) in &f.vars {
                    if names.insert(name.name.clone(), name.span).is_some() {
                        errors.push(Diag::error(
                            code::VARIABLE_DUPLICATE,
                            name.span,
                            format!("field '{}' is declared twice", name.name),
                        ));
                        continue;
                    }
                    if f.modifiers.is_static {
                        if init.is_some() {
                            has_static_init = true;
                        }
                        statics.push(p.statics.len() as u32);
                        p.statics.push(StaticInfo {
                            name: name.name.clone(),
                            qual: format!("{qual}.{}", name.name),
                            ty: ty.clone(),
                            class: ci as u32,
                            is_final: f.modifiers.is_final,
                            access: Access::of(&f.modifiers),
                        });
                        // A static of an owned kind owns or borrows like any slot (LANGUAGE
                        // §6.2): its hidden owns-flag is the next static, named so no source
                        // field can clash (program end reads it too).
                        if ty.is_owned_kind() {
                            p.statics.push(StaticInfo {
                                name: format!("$own.{}", name.name),
                                qual: format!("{qual}.$own.{}", name.name),
                                ty: Ty::BOOL,
                                class: ci as u32,
                                is_final: false,
                                access: Access::Private,
                            });
                        }
                    } else {
                        if matches!(ty, Ty::Shared(_)) {
                            errors.push(Diag::error(
                                code::NOT_IMPLEMENTED,
                                f.ty.span,
                                "instance fields of this type are not implemented",
                            ));
                        }
                        fields.push(FieldInfo {
                            name: name.name.clone(),
                            ty: ty.clone(),
                            is_final: f.modifiers.is_final,
                            access: Access::of(&f.modifiers),
                        });
                    }
                }
            }
        }
        // Each field of an owned kind carries a hidden owns-flag (LANGUAGE §6.2: a slot owns or
        // borrows), named so no source field can clash.
        let flags: Vec<FieldInfo> = fields
            .iter()
            .filter(|f| f.ty.is_owned_kind())
            .map(|f| FieldInfo {
                name: format!("$own.{}", f.name),
                ty: Ty::BOOL,
                is_final: false,
                access: Access::Private,
            })
            .collect();
        let owns_fields = !flags.is_empty();
        fields.extend(flags);
        if owns_fields {
            // Set when its drop begins: an object reached again while it drops (an ownership
            // cycle, `n.next = #n`) does not drop twice (§6.5).
            fields.push(FieldInfo {
                name: DROPPING_FIELD.into(),
                ty: Ty::BOOL,
                is_final: false,
                access: Access::Private,
            });
        }
        p.classes[ci].fields = fields;
        let dtor = decl.members.iter().enumerate().find_map(|(mi, m)| match m {
            Member::Destructor(d) => Some((mi, d)),
            _ => None,
        });
        // A destructor is unique (§5.5): a second one is a same-signature member.
        for d in decl
            .members
            .iter()
            .filter_map(|m| match m {
                Member::Destructor(d) => Some(d),
                _ => None,
            })
            .skip(1)
        {
            errors.push(Diag::error(
                code::VARIABLE_DUPLICATE,
                d.name.span,
                format!("class '{}' already has a destructor", decl.name.name),
            ));
        }
        if let Some((_, d)) = dtor {
            if d.name.name != decl.name.name {
                errors.push(Diag::error(
                    code::SYNTAX,
                    d.name.span,
                    format!(
                        "destructor name '~{}' does not match class '{}'",
                        d.name.name, decl.name.name
                    ),
                ));
            }
        }
        if dtor.is_some() || owns_fields {
            let kind = JobKind::Drop(dtor.map(|(mi, _)| (ui, idx, mi)));
            let f = p.hidden_fn(format!("{qual}.~{}", decl.name.name), ci, kind, file);
            p.classes[ci].drop_fn = Some(f);
        }
        p.classes[ci].statics = statics;
        if decl
            .members
            .iter()
            .any(|m| matches!(m, Member::StaticInit(_)))
        {
            has_static_init = true;
        }
        if has_static_init {
            let f = p.hidden_fn(format!("{qual}.<clinit>"), ci, JobKind::Clinit, file);
            p.init.push(f);
        }
        let owns_statics = p.classes[ci]
            .statics
            .iter()
            .any(|&s| p.statics[s as usize].ty.is_owned_kind());
        if owns_statics {
            let f = p.hidden_fn(format!("{qual}.<clfini>"), ci, JobKind::Clfini, file);
            p.fini.push(f);
        }
        let mut methods: Vec<MethodSig> = vec![];
        let mut ctors: Vec<MethodSig> = vec![];
        for (mi, m) in decl.members.iter().enumerate() {
            match m {
                Member::Method(md) => {
                    let kind = annotation_kind(&md.annotations);
                    let mut params = vec![];
                    for prm in &md.params {
                        match p.resolve_type(ui, &prm.ty) {
                            Ok(t) => params.push((prm.name.name.clone(), t)),
                            Err(d) => {
                                errors.push(d);
                                params.push((prm.name.name.clone(), Ty::Error));
                            }
                        }
                    }
                    let ret = match &md.ret {
                        None => Ty::Void,
                        Some(t) => p.resolve_type(ui, t).unwrap_or_else(|d| {
                            errors.push(d);
                            Ty::Error
                        }),
                    };
                    if kind != FnKind::Host {
                        device_signatures.push((md, kind, params.clone(), ret.clone()));
                    } else {
                        // XPU-K03: a shared array exists only in device code (a `@Host @Device`
                        // method is host code too).
                        for (prm, (_, ty)) in md.params.iter().zip(&params) {
                            if matches!(ty, Ty::Shared(_)) {
                                errors.push(Diag::error(
                                    code::XPU_K03,
                                    prm.ty.span,
                                    "Shared<T> parameters exist only in @Device functions",
                                ));
                            }
                        }
                        if matches!(ret, Ty::Shared(_)) {
                            errors.push(Diag::error(
                                code::XPU_K03,
                                md.ret.as_ref().map_or(md.name.span, |t| t.span),
                                "a host method cannot return Shared<T>",
                            ));
                        }
                    }
                    if md.modifiers.native {
                        errors.extend(native_signature_errors(md, kind, &params, &ret));
                    }
                    // Two kernels, or a kernel and a method, may not share a name (XPU §3.2).
                    if methods.iter().any(|o| {
                        o.name == md.name.name
                            && (o.kind == FnKind::Kernel || kind == FnKind::Kernel)
                    }) {
                        errors.push(Diag::error(
                            code::XPU_KERNEL_NAME_COLLISION,
                            md.name.span,
                            format!(
                                "'{}' names a kernel and another method of this class",
                                md.name.name
                            ),
                        ));
                        continue;
                    }
                    if methods.iter().any(|o| {
                        o.name == md.name.name
                            && o.params
                                .iter()
                                .map(|x| &x.1)
                                .eq(params.iter().map(|x| &x.1))
                    }) {
                        errors.push(Diag::error(
                            code::VARIABLE_DUPLICATE,
                            md.name.span,
                            format!(
                                "method '{}' is declared twice with the same parameters",
                                md.name.name
                            ),
                        ));
                        continue;
                    }
                    // `@Host @Device`: callable from both sides, so the body is compiled twice:
                    // this host function and a device twin.
                    let host_too = md.annotations.iter().any(|a| a.name.joined() == "Host");
                    let dual = kind == FnKind::Device && host_too;
                    let f = p.functions.len() as u32;
                    let shell_kind = if dual { FnKind::Host } else { kind };
                    p.functions
                        .push(shell(format!("{qual}.{}", md.name.name), shell_kind, file));
                    if md.modifiers.native {
                        // No body to compile: the signature is the whole function (its
                        // parameters are scalars and Strings, so there are no owns-flags).
                        let func = &mut p.functions[f as usize];
                        func.kind = FnKind::Native;
                        func.regs = params.iter().map(|(_, t)| t.reg()).collect();
                        func.params = func.regs.len() as u16;
                        func.ret = (ret != Ty::Void).then(|| ret.reg());
                        methods.push(MethodSig {
                            name: md.name.name.clone(),
                            params,
                            ret,
                            is_static: true,
                            access: Access::of(&md.modifiers),
                            kind: FnKind::Host,
                            func: f,
                            body: None,
                            span: md.name.span,
                            device_twin: None,
                        });
                        continue;
                    }
                    let mut sig = MethodSig {
                        name: md.name.name.clone(),
                        params,
                        ret,
                        is_static: md.modifiers.is_static,
                        access: Access::of(&md.modifiers),
                        kind,
                        func: f,
                        body: Some((ui, idx, mi)),
                        span: md.name.span,
                        device_twin: None,
                    };
                    if dual {
                        sig.kind = FnKind::Host;
                        let twin = p.functions.len() as u32;
                        p.functions.push(shell(
                            format!("{qual}.{}", md.name.name),
                            FnKind::Device,
                            file,
                        ));
                        sig.device_twin = Some(twin);
                        let device_sig = MethodSig {
                            kind: FnKind::Device,
                            func: twin,
                            device_twin: None,
                            ..sig.clone()
                        };
                        p.jobs.push(Job {
                            func: twin,
                            class: ci as u32,
                            kind: JobKind::Method(ui, idx, mi),
                            sig: Some(device_sig),
                        });
                    }
                    p.jobs.push(Job {
                        func: f,
                        class: ci as u32,
                        kind: JobKind::Method(ui, idx, mi),
                        sig: Some(sig.clone()),
                    });
                    methods.push(sig);
                }
                Member::Constructor(cd) => {
                    if cd.name.name != decl.name.name {
                        errors.push(Diag::error(
                            code::SYNTAX,
                            cd.name.span,
                            format!(
                                "constructor name '{}' does not match class '{}'",
                                cd.name.name, decl.name.name
                            ),
                        ));
                        continue;
                    }
                    let mut params = vec![];
                    for prm in &cd.params {
                        match p.resolve_type(ui, &prm.ty) {
                            Ok(t) => params.push((prm.name.name.clone(), t)),
                            Err(d) => {
                                errors.push(d);
                                params.push((prm.name.name.clone(), Ty::Error));
                            }
                        }
                    }
                    if ctors.iter().any(|o| {
                        o.params
                            .iter()
                            .map(|x| &x.1)
                            .eq(params.iter().map(|x| &x.1))
                    }) {
                        errors.push(Diag::error(
                            code::DUPLICATE_CONSTRUCTOR,
                            cd.name.span,
                            "constructor declared twice with the same parameters",
                        ));
                        continue;
                    }
                    let f = p.functions.len() as u32;
                    p.functions
                        .push(shell(format!("{qual}.<init>"), FnKind::Host, file));
                    let sig = MethodSig {
                        name: "<init>".into(),
                        params,
                        ret: Ty::Void,
                        is_static: false,
                        access: Access::of(&cd.modifiers),
                        kind: FnKind::Host,
                        func: f,
                        body: Some((ui, idx, mi)),
                        span: cd.name.span,
                        device_twin: None,
                    };
                    p.jobs.push(Job {
                        func: f,
                        class: ci as u32,
                        kind: JobKind::Ctor(Some((ui, idx, mi))),
                        sig: Some(sig.clone()),
                    });
                    ctors.push(sig);
                }
                // The destructor runs from the class's drop function (above).
                Member::Destructor(_) => {}
                // Static blocks run in `<clinit>`, in textual order with the initialisers.
                Member::StaticInit(_) => {}
                Member::Field(_) => {}
            }
        }
        if ctors.is_empty() {
            let f = p.functions.len() as u32;
            p.functions
                .push(shell(format!("{qual}.<init>"), FnKind::Host, file));
            let sig = MethodSig {
                name: "<init>".into(),
                params: vec![],
                ret: Ty::Void,
                is_static: false,
                access: Access::Public,
                kind: FnKind::Host,
                func: f,
                body: None,
                span: decl.name.span,
                device_twin: None,
            };
            p.jobs.push(Job {
                func: f,
                class: ci as u32,
                kind: JobKind::Ctor(None),
                sig: Some(sig.clone()),
            });
            ctors.push(sig);
        }
        p.classes[ci].methods = methods;
        p.classes[ci].ctors = ctors;
    }
    for (md, kind, params, ret) in device_signatures {
        errors.extend(device_signature_errors(&p, md, kind, &params, &ret));
    }
    vector_result_statics(&mut p);
    // The default entry (LANGUAGE §5.8): the unique static main(), main(String[] args) or
    // run(). A method of those names with other parameters, or an instance method, is an
    // ordinary method (upstream programs keep a helper `run(…)` beside `main()`).
    let mut candidates = vec![];
    for c in &p.classes {
        for m in &c.methods {
            if could_be_default_entry(m) {
                candidates.push(m.clone());
            }
        }
    }
    if let [m] = candidates.as_slice() {
        if entry_signature_ok(m) {
            p.entry = Some(m.func);
        }
    }
    if errors.is_empty() {
        Ok(p)
    } else {
        errors.sort_by_key(|d| d.span.map(|s| (s.file, s.start)));
        Err(errors)
    }
}

/// Adds the hidden statics through which host functions return lanes `1…N−1` of a vector
/// result (lane 0 is the `ret` value): one per (element type, lane), shared by every such
/// function, since the caller reads them right after the call returns.
fn vector_result_statics(p: &mut Program) {
    let mut needed: Vec<(Scalar, u8, u32)> = vec![];
    for c in &p.classes {
        for m in &c.methods {
            if let (Ty::Vector(s, n), FnKind::Host) = (&m.ret, m.kind) {
                for k in 1..*n {
                    needed.push((*s, k, m.func));
                }
            }
        }
    }
    for (s, k, func) in needed {
        if p.vret.contains_key(&(s, k)) {
            continue;
        }
        // Owned by the first class (statics need one; the name cannot clash with a field).
        let class = p
            .classes
            .iter()
            .position(|c| c.methods.iter().any(|m| m.func == func))
            .unwrap_or(0) as u32;
        let qual = format!("$vret.{}.{k}", s.name());
        p.vret.insert((s, k), p.statics.len() as u32);
        p.statics.push(StaticInfo {
            name: qual.clone(),
            qual,
            ty: Ty::Prim(s),
            class,
            is_final: false,
            access: Access::Private,
        });
    }
}

/// True for a POD class: at least one instance field, all primitive (XPU §3.2); never a
/// library type's class (a `KernelTimer` is a host object).
pub fn is_pod(p: &Program, c: u32) -> bool {
    let fields = &p.classes[c as usize].fields;
    !p.is_library_class(c)
        && !fields.is_empty()
        && fields.iter().all(|f| matches!(f.ty, Ty::Prim(_)))
}

/// Appends the classes standing for `KernelTimer` and `KernelManifest` (XPU §2.13) after the
/// user classes. They are not in `by_qual`: source names reach them only as library classes.
fn library_classes(p: &mut Program) {
    let field = |name: &str, ty: Ty, public: bool| FieldInfo {
        name: name.into(),
        ty,
        is_final: public,
        access: if public {
            Access::Public
        } else {
            Access::Private
        },
    };
    let class = |name: &str, fields: Vec<FieldInfo>| ClassInfo {
        name: name.into(),
        qual: format!("cajeta.xpu.{name}"),
        package: "cajeta.xpu".into(),
        unit: usize::MAX,
        index: usize::MAX,
        fields,
        statics: vec![],
        methods: vec![],
        ctors: vec![],
        public: true,
        drop_fn: None,
    };
    p.timer_class = p.classes.len() as u32;
    p.classes.push(class(
        "KernelTimer",
        vec![
            field("$begin", Ty::Prim(Scalar::I64), false),
            field("$end", Ty::Prim(Scalar::I64), false),
            field("$state", Ty::Prim(Scalar::I32), false),
        ],
    ));
    p.manifest_class = p.classes.len() as u32;
    p.classes.push(class(
        "KernelManifest",
        vec![
            field("kernel", Ty::Str, true),
            field("target", Ty::Str, true),
            field("waveWidth", Ty::Prim(Scalar::I32), true),
        ],
    ));
}

/// XPU-K01 (kernels) and XPU-N01 (device functions): static, the right result, admissible
/// parameters (primitives, buffers, POD classes).
fn device_signature_errors(
    p: &Program,
    md: &ast::MethodDecl,
    kind: FnKind,
    params: &[(String, Ty)],
    ret: &Ty,
) -> Vec<Diag> {
    let code = if kind == FnKind::Kernel {
        code::XPU_K01
    } else {
        code::XPU_N01
    };
    let what = if kind == FnKind::Kernel {
        "a kernel"
    } else {
        "a @Device function"
    };
    let mut out = vec![];
    if kind == FnKind::Kernel {
        if let Err(e) = super::xpu_t2::kernel_attrs(&md.annotations) {
            out.extend(e);
        }
    }
    if !md.modifiers.is_static {
        out.push(Diag::error(
            code,
            md.name.span,
            format!("{what} must be static"),
        ));
    }
    let ret_ok = matches!(
        (kind, ret),
        (_, Ty::Void | Ty::Error) | (FnKind::Device, Ty::Prim(_) | Ty::Vector(..))
    );
    if !ret_ok {
        let span = md.ret.as_ref().map_or(md.name.span, |t| t.span);
        out.push(Diag::error(
            code,
            span,
            format!(
                "{what} must return void{}",
                if kind == FnKind::Device {
                    ", a primitive or a Vector"
                } else {
                    ""
                }
            ),
        ));
    }
    if md.ret_transfer {
        out.push(Diag::error(
            code,
            md.name.span,
            format!("{what} cannot use '#' types"),
        ));
    }
    for (prm, (name, ty)) in md.params.iter().zip(params) {
        let ok = match ty {
            Ty::Prim(_) | Ty::Buffer(_) | Ty::Vector(..) | Ty::Error => true,
            // XPU §2.6 T2: a workgroup array passed to a @Device function.
            Ty::Shared(_) => kind == FnKind::Device,
            Ty::Class(c) => is_pod(p, *c),
            _ => false,
        };
        if prm.transfer {
            out.push(Diag::error(
                code,
                prm.start.to(prm.ty.span),
                format!("{what} cannot use '#' types"),
            ));
        } else if matches!(ty, Ty::Array(e) if matches!(**e, Ty::Buffer(_))) {
            // Bindless buffer arrays are T3 (XPU.md §2.14).
            out.push(Diag::error(
                code::NOT_IMPLEMENTED,
                prm.ty.span,
                builtins::later_tier(&format!("the bindless parameter '{name}'")),
            ));
        } else if !ok {
            out.push(Diag::error(
                code,
                prm.ty.span,
                format!(
                    "parameter '{name}' of type {} is not admissible for {what}",
                    builtins::ty_name(p, ty)
                ),
            ));
        }
    }
    out
}

/// Whether `m` is one of the methods the default entry is chosen among: a static host
/// `main()`, `main(String[])` or `run()`, whatever its result type (a wrong one is then
/// `CAJETA_ERROR_NO_ENTRY`, not a reason to look further).
fn could_be_default_entry(m: &MethodSig) -> bool {
    let params_ok = match (m.name.as_str(), m.params.as_slice()) {
        ("main" | "run", []) => true,
        ("main", [(_, Ty::Array(e))]) => **e == Ty::Str,
        _ => false,
    };
    m.is_static && params_ok && m.kind == FnKind::Host
}

/// Whether a method may be an entry point (LANGUAGE §5.8).
pub fn entry_signature_ok(m: &MethodSig) -> bool {
    let params_ok = match m.params.as_slice() {
        [] => true,
        [(_, Ty::Array(e))] => **e == Ty::Str,
        _ => false,
    };
    let ret_ok = matches!(m.ret, Ty::Void | Ty::Prim(_) | Ty::Str);
    m.is_static && params_ok && ret_ok && m.kind == FnKind::Host
}
