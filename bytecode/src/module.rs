//! The in-memory form of a bytecode module: what the compiler produces, `.cjb` encodes and the
//! VM executes after verification.

use crate::opcodes::Instr;
use crate::types::Type;

/// Format version written into every `.cjb` file; bumped on any incompatible change.
pub const FORMAT_VERSION: u32 = 4;

/// A constant-pool entry.
#[derive(Clone, PartialEq, Debug)]
pub enum Const {
    /// A 64-bit cell value (integer in canonical form, or float bits; see [`crate::types`]).
    Bits(u64),
    /// A string literal.
    Str(String),
}

/// What kind of code a function is.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
#[repr(u8)]
pub enum FnKind {
    /// Ordinary host code (methods, constructors, static initialisers).
    Host = 0,
    /// A `@Kernel` entry point.
    Kernel = 1,
    /// A `@Device` helper, callable from kernels and device functions only.
    Device = 2,
    /// A `static native` method: no code, its behaviour is a function the embedding host
    /// registers with the VM (calling an unregistered one is a runtime error). Callable from
    /// host code only; its parameters and result are primitives or `String` (V-NATIVE).
    Native = 3,
}

/// A source position attached to a pc.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct LineEntry {
    /// First instruction this position applies to (until the next entry).
    pub pc: u32,
    /// 1-based line.
    pub line: u32,
    /// 1-based column (code points).
    pub col: u32,
}

/// The kind of a structured control-flow region.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum RegionKind {
    /// A two-way selection: `header` holds the conditional branch, `merge` is where the arms
    /// meet; `cont` is unused (0).
    If = 0,
    /// A loop: `header` is the first instruction of the condition test (the back-edge target),
    /// `cont` the first instruction of the continue block (update), `merge` the first
    /// instruction after the loop.
    Loop = 1,
}

/// One entry of a function's control-flow region table (DESIGN §2): lowerings to structured
/// targets (SPIR-V, PTX, Cranelift) read it instead of rediscovering structure.
///
/// Invariant: regions are listed in order of `header`, and properly nested.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Region {
    /// If or loop.
    pub kind: RegionKind,
    /// See [`RegionKind`].
    pub header: u32,
    /// See [`RegionKind`].
    pub merge: u32,
    /// See [`RegionKind`].
    pub cont: u32,
}

/// A debug name for a register (a source local).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LocalName {
    /// The register.
    pub reg: u16,
    /// The source name.
    pub name: String,
}

/// A `shared T[n]` declaration of a kernel (XPU §2.6): one array per workgroup.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct SharedDecl {
    /// Element type (numeric).
    pub elem: crate::types::Scalar,
    /// Number of elements; 0 for the kernel's dynamic shared array (T2, at most one), whose
    /// memory is the launch's `sharedBytes` (`sharedBytes / elem.size()` elements, the length
    /// `buf.len` gives; the compiler checks accesses against `min(n, that)` with `chk.idx`).
    pub len: u32,
}

/// A compiled function (method, constructor, static initialiser, kernel or device function).
#[derive(Clone, PartialEq, Debug)]
pub struct Function {
    /// Qualified name used in traces and `--entry`: `pkg.Class.method`, `pkg.Class.<init>`,
    /// `pkg.Class.<clinit>` (no `pkg.` in the unnamed package).
    pub name: String,
    /// Host, kernel or device code.
    pub kind: FnKind,
    /// Number of parameters: they arrive in registers `0..params`. For host functions
    /// compiled from Cajeta these are `this` (constructors), the declared parameters, then one
    /// boolean owns-flag per declared parameter of an owned kind (array, object, buffer,
    /// stream), in order; kernels and device functions take their declared parameters with
    /// POD classes flattened to their fields, and no flags.
    pub params: u16,
    /// Result type; `None` for `void`.
    pub ret: Option<Type>,
    /// Type of every register (parameters first). Invariant: `regs.len() >= params`.
    pub regs: Vec<Type>,
    /// The code. Invariant (verified): non-empty and ends in a terminator; empty for a
    /// [`FnKind::Native`] function.
    pub code: Vec<Instr>,
    /// Index into [`Module::files`] of the defining source file.
    pub file: u32,
    /// pc → source position, sorted by pc.
    pub lines: Vec<LineEntry>,
    /// Structured control-flow regions.
    pub regions: Vec<Region>,
    /// Debug names of registers holding source locals.
    pub locals: Vec<LocalName>,
    /// Shared-memory declarations (kernels only), indexed by `shared.ref`'s operand.
    pub shared: Vec<SharedDecl>,
    /// Calls the compiler expanded in place (`@Device` functions returning a `Vector`):
    /// traces still show the callee's frame. Invariant (verified): properly nested.
    pub inlined: Vec<InlinedCall>,
}

/// Code a compiler expanded from a call: pcs `start..end` run function `callee`'s body, called
/// at `line:col` (of the enclosing function, or of the enclosing expanded call's callee). The
/// line table gives positions in the callee's source inside the range.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct InlinedCall {
    /// First pc of the body.
    pub start: u32,
    /// One past its last pc.
    pub end: u32,
    /// The function whose body it is.
    pub callee: u32,
    /// The call's line (1-based; 0 = unknown).
    pub line: u32,
    /// The call's column.
    pub col: u32,
}

impl Function {
    /// The source position of `pc` (line 0 if unknown).
    pub fn position(&self, pc: u32) -> (u32, u32) {
        let i = self.lines.partition_point(|e| e.pc <= pc);
        if i == 0 {
            (0, 0)
        } else {
            (self.lines[i - 1].line, self.lines[i - 1].col)
        }
    }

    /// The expanded calls whose code holds `pc`, outermost first.
    pub fn inlined_at(&self, pc: u32) -> Vec<InlinedCall> {
        let mut calls: Vec<InlinedCall> = self
            .inlined
            .iter()
            .filter(|c| c.start <= pc && pc < c.end)
            .copied()
            .collect();
        // Nested ranges: an outer one starts no later and ends no earlier.
        calls.sort_by_key(|c| (c.start, std::cmp::Reverse(c.end)));
        calls
    }

    /// Whether the index (or, for `newarr`, the length) that instruction `pc` uses holds a
    /// uint64 value, so that a bounds or size error prints its bits unsigned. Index operands
    /// are int64 registers: the compiler converts a uint64 with a `wrap.i64` just before the
    /// access, whose source register's type tells — when no branch lands between the two
    /// (then the conversion is the value's only definition there), and whose destination is
    /// a temporary: a conversion into a named local is an assignment's (`int64 z = u;`), a
    /// signed value. An explicit `(int64)` cast of a uint64 ends in a `mov` of the
    /// conversion, so its value reads signed too.
    pub fn index_holds_u64(&self, pc: u32) -> bool {
        use crate::opcodes::{Op, Operand, RegClass};
        use crate::types::Scalar;
        let Some(&ins) = self.code.get(pc as usize) else {
            return false;
        };
        let ops = ins.op.operands();
        // The operand after the array, buffer or shared array; `newarr`'s length; `chk.idx`'s
        // index.
        let reg = match ins.op {
            Op::NewArr => ins.b,
            Op::CheckIndex => ins.a,
            _ => {
                let regs = [ins.a, ins.b, ins.c];
                let mem = ops
                    .iter()
                    .position(|o| matches!(o, Operand::Src(RegClass::DevMem | RegClass::Array)));
                match mem.and_then(|m| regs.get(m + 1)) {
                    Some(&r) => r,
                    None => return false,
                }
            }
        };
        let writes = |i: &Instr| matches!(i.op.operands()[0], Operand::Dst(_)) && i.a == reg;
        let Some(def) = self.code[..pc as usize].iter().rposition(writes) else {
            return false;
        };
        let d = self.code[def];
        let entered = self
            .code
            .iter()
            .any(|i| i.op.is_branch() && (def as u32 + 1..=pc).contains(&i.bc()));
        let between = self.code[def + 1..pc as usize]
            .iter()
            .any(|i| i.op.is_branch());
        d.op == Op::WrapI64
            && !entered
            && !between
            && self.regs.get(d.b as usize) == Some(&Type::Scalar(Scalar::U64))
            && !self.locals.iter().any(|l| l.reg == d.a)
    }

    /// The simple name (after the last `.`).
    pub fn simple_name(&self) -> &str {
        self.name.rsplit('.').next().unwrap_or(&self.name)
    }
}

/// A field of a class.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Field {
    /// Source name.
    pub name: String,
    /// Field type.
    pub ty: Type,
}

/// A class with instance fields (POD classes in T1). Static-only classes need no entry.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Class {
    /// Qualified name (`pkg.Class`).
    pub name: String,
    /// Instance fields in declaration order.
    pub fields: Vec<Field>,
}

/// A static field.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Static {
    /// Qualified name (`pkg.Class.field`).
    pub name: String,
    /// Field type.
    pub ty: Type,
}

/// A whole program.
#[derive(Clone, PartialEq, Debug, Default)]
pub struct Module {
    /// Source file names, as given on the command line.
    pub files: Vec<String>,
    /// The constant pool.
    pub consts: Vec<Const>,
    /// Classes with instance fields.
    pub classes: Vec<Class>,
    /// Static fields.
    pub statics: Vec<Static>,
    /// All functions.
    pub functions: Vec<Function>,
    /// Static initialisers (`<clinit>` functions) in the order they run (LANGUAGE §5.8).
    pub init: Vec<u32>,
    /// Static finalisers (`<clfini>` functions) in the order they run at the normal end of a
    /// program (LANGUAGE §5.8 step 4: each drops its class's owned statics, last first; the
    /// classes last first).
    pub fini: Vec<u32>,
    /// The default entry point (the unique `main`/`run`), if the program has one.
    pub entry: Option<u32>,
}

impl Module {
    /// Finds a function by qualified name.
    pub fn function_by_name(&self, name: &str) -> Option<u32> {
        self.functions
            .iter()
            .position(|f| f.name == name)
            .map(|i| i as u32)
    }
}

/// The XPU §3.1 annotations of a kernel (`@Wave`, `@Occupancy`, `@FastMath`), recorded as the
/// kernel's leading `kattr` instructions (V-KATTR) so that the function layout stays unchanged.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct KernelAttrs {
    /// `@Wave(width = N)`: the wave width the kernel requires.
    pub wave_width: Option<u32>,
    /// `@Occupancy(maxThreads = N)`: a launch with a larger block is refused.
    pub max_threads: Option<u32>,
    /// `@FastMath`: the backend may contract, reassociate and approximate.
    pub fast_math: bool,
}

impl KernelAttrs {
    /// `kattr` attribute selector of `@Wave(width = N)`.
    pub const WAVE_WIDTH: u16 = 0;
    /// `kattr` attribute selector of `@Occupancy(maxThreads = N)`.
    pub const MAX_THREADS: u16 = 1;
    /// `kattr` attribute selector of `@FastMath`.
    pub const FAST_MATH: u16 = 2;

    /// The attributes a function declares (all absent for a function without `kattr`).
    pub fn of(f: &Function) -> KernelAttrs {
        let mut a = KernelAttrs::default();
        for i in f.code.iter().take_while(|i| i.op == crate::Op::KernelAttr) {
            match i.b {
                Self::WAVE_WIDTH => a.wave_width = Some(u32::from(i.c)),
                Self::MAX_THREADS => a.max_threads = Some(u32::from(i.c)),
                Self::FAST_MATH => a.fast_math = true,
                _ => {}
            }
        }
        a
    }

    /// Checks one `kattr` operand pair (the V-KATTR value rule).
    ///
    /// # Errors
    /// Why the attribute or its value is not valid.
    pub fn check(attr: u16, value: u16) -> Result<(), &'static str> {
        match attr {
            Self::WAVE_WIDTH if value.is_power_of_two() && value <= 64 => Ok(()),
            Self::WAVE_WIDTH => Err("a wave width must be a power of two from 1 to 64"),
            Self::MAX_THREADS if value >= 1 => Ok(()),
            Self::MAX_THREADS => Err("maxThreads must be at least 1"),
            Self::FAST_MATH if value == 1 => Ok(()),
            Self::FAST_MATH => Err("FastMath takes the value 1"),
            _ => Err("unknown kernel attribute"),
        }
    }
}
