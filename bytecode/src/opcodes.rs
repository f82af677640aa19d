//! The instruction set: one table documents every opcode (as Lua's `lopcodes.h`).
//!
//! # Instruction layout
//!
//! Every instruction is 8 bytes:
//!
//! ```text
//!  0      16      32      48      64
//!  +-------+-------+-------+-------+
//!  |  op   |   a   |   b   |   c   |    three 16-bit operands
//!  +-------+-------+-------+-------+
//!  |  op   |   a   |      bc       |    one operand and a 32-bit immediate (b low, c high)
//!  +-------+-------+---------------+
//! ```
//!
//! Operands named `Dst`/`Src` are register indices into the current frame; `Imm16`/`Imm32` are
//! raw immediates; `Const`, `Target`, `Func`, `Class`, `Field`, `Static` index the module's
//! constant pool, the function's code, functions, classes, the class's fields and statics.
//! `Special` operands are checked by a dedicated verifier rule (documented in `verify.rs`).
//!
//! # Semantics notation
//!
//! `r[x]` is register x, `K[x]` a constant, `bc` the 32-bit immediate. Integer registers hold
//! *canonical* values (see [`crate::types`]): every integer opcode reads canonical inputs and
//! writes a canonical result, so `wrap.*` is the only place where bits change width.
//!
//! # Adding an opcode
//!
//! Add a row to [`for_each_opcode!`]; the [`Op`] enum, mnemonics, operand shapes, the
//! decoder's opcode check and the verifier's generic operand rules follow from it. Then give
//! it an interpreter arm, a JIT/backend lowering where relevant, and a test program
//! (see `docs/add-an-opcode.md`).

use crate::types::{Scalar, Type};

/// The class of types a register operand must have.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum RegClass {
    /// Exactly this type.
    Is(Type),
    /// Any type (a dedicated rule relates it to other operands).
    Any,
    /// An integer type, `char` or `boolean` (canonical 64-bit cell).
    IntLike,
    /// One of the eight integer types.
    Int,
    /// Any reference type (String, array, object, buffer, stream).
    Ref,
    /// Any array type.
    Array,
    /// Any class instance type.
    Object,
    /// Any `KernelBuffer<T>` type.
    Buffer,
    /// Any `Shared<T>` type.
    Shared,
    /// A buffer or a shared array (device memory); the element type is checked by the
    /// opcode's rule.
    DevMem,
}

/// The shape of one operand slot (`a`, `b` or `c`) of an opcode.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Operand {
    /// Unused; must be zero.
    N,
    /// A register written by the instruction.
    Dst(RegClass),
    /// A register read by the instruction.
    Src(RegClass),
    /// A raw 16-bit immediate.
    Imm16,
    /// A 32-bit immediate spanning `b` and `c` (only in slot `b`; slot `c` is then `N`).
    Imm32,
    /// A constant-pool index in `bc`.
    Const,
    /// A jump target (absolute pc) in `bc`.
    Target,
    /// A function index.
    Func,
    /// A class index in `bc`.
    Class,
    /// A field index of the class of the object operand.
    Field,
    /// A static-field index.
    Static,
    /// A [`MathFn`] selector.
    MathFn,
    /// Checked by an opcode-specific verifier rule.
    Special,
}

use Operand::*;
use RegClass::{
    Any as ANY, Array as ARRAY, Buffer as BUFFER, DevMem as DEVMEM, Int as INT, IntLike as INTLIKE,
    Object as OBJECT, Ref as REF, Shared as SHARED,
};

const fn is(s: Scalar) -> RegClass {
    RegClass::Is(Type::Scalar(s))
}
const T_BOOL: RegClass = is(Scalar::Bool);
const T_CHAR: RegClass = is(Scalar::Char);
const T_I8: RegClass = is(Scalar::I8);
const T_U8: RegClass = is(Scalar::U8);
const T_I16: RegClass = is(Scalar::I16);
const T_U16: RegClass = is(Scalar::U16);
const T_I32: RegClass = is(Scalar::I32);
const T_U32: RegClass = is(Scalar::U32);
const T_I64: RegClass = is(Scalar::I64);
const T_U64: RegClass = is(Scalar::U64);
const T_F32: RegClass = is(Scalar::F32);
const T_F64: RegClass = is(Scalar::F64);
const T_F16: RegClass = is(Scalar::F16);
const T_BF16: RegClass = is(Scalar::BF16);
const T_STR: RegClass = RegClass::Is(Type::Str);
const T_STREAM: RegClass = RegClass::Is(Type::Stream);
const T_EVENT: RegClass = RegClass::Is(Type::Event);

/// Unary float functions selected by the `c` operand of `math1.*`.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
#[repr(u16)]
pub enum MathFn {
    /// Correctly rounded square root.
    Sqrt = 0,
    /// Round toward −∞.
    Floor = 1,
    /// Round toward +∞.
    Ceil = 2,
    /// Round toward zero.
    Trunc = 3,
    /// Round half away from zero.
    Round = 4,
    /// Absolute value.
    Abs = 5,
    /// 1 / sqrt(x).
    Rsqrt = 6,
    /// Sine.
    Sin = 7,
    /// Cosine.
    Cos = 8,
    /// Tangent.
    Tan = 9,
    /// Arc sine.
    Asin = 10,
    /// Arc cosine.
    Acos = 11,
    /// Arc tangent.
    Atan = 12,
    /// e^x.
    Exp = 13,
    /// 2^x.
    Exp2 = 14,
    /// Natural logarithm.
    Log = 15,
    /// Base-2 logarithm.
    Log2 = 16,
    /// Base-10 logarithm.
    Log10 = 17,
}

impl MathFn {
    /// Every function, indexed by its code.
    pub const ALL: [MathFn; 18] = [
        MathFn::Sqrt,
        MathFn::Floor,
        MathFn::Ceil,
        MathFn::Trunc,
        MathFn::Round,
        MathFn::Abs,
        MathFn::Rsqrt,
        MathFn::Sin,
        MathFn::Cos,
        MathFn::Tan,
        MathFn::Asin,
        MathFn::Acos,
        MathFn::Atan,
        MathFn::Exp,
        MathFn::Exp2,
        MathFn::Log,
        MathFn::Log2,
        MathFn::Log10,
    ];

    /// Decodes a selector.
    pub fn from_u16(v: u16) -> Option<MathFn> {
        MathFn::ALL.get(v as usize).copied()
    }

    /// The `Math` method name.
    pub fn name(self) -> &'static str {
        match self {
            MathFn::Sqrt => "sqrt",
            MathFn::Floor => "floor",
            MathFn::Ceil => "ceil",
            MathFn::Trunc => "trunc",
            MathFn::Round => "round",
            MathFn::Abs => "abs",
            MathFn::Rsqrt => "rsqrt",
            MathFn::Sin => "sin",
            MathFn::Cos => "cos",
            MathFn::Tan => "tan",
            MathFn::Asin => "asin",
            MathFn::Acos => "acos",
            MathFn::Atan => "atan",
            MathFn::Exp => "exp",
            MathFn::Exp2 => "exp2",
            MathFn::Log => "log",
            MathFn::Log2 => "log2",
            MathFn::Log10 => "log10",
        }
    }

    /// The function on a float64 (XPU §2.12): the one definition every executor uses.
    #[inline]
    pub fn eval_f64(self, x: f64) -> f64 {
        match self {
            MathFn::Sqrt => x.sqrt(),
            MathFn::Floor => quiet_f64(x.floor()),
            MathFn::Ceil => quiet_f64(x.ceil()),
            MathFn::Trunc => quiet_f64(x.trunc()),
            MathFn::Round => x.round(), // half away from zero
            MathFn::Abs => x.abs(),
            MathFn::Rsqrt => 1.0 / x.sqrt(),
            MathFn::Sin => x.sin(),
            MathFn::Cos => x.cos(),
            MathFn::Tan => x.tan(),
            MathFn::Asin => x.asin(),
            MathFn::Acos => x.acos(),
            MathFn::Atan => x.atan(),
            MathFn::Exp => x.exp(),
            MathFn::Exp2 => x.exp2(),
            MathFn::Log => x.ln(),
            MathFn::Log2 => x.log2(),
            MathFn::Log10 => x.log10(),
        }
    }

    /// The function on a float32: the exact operations directly in float32 (sqrt is correctly
    /// rounded either way), every other function computed in float64 and rounded once.
    #[inline]
    pub fn eval_f32(self, x: f32) -> f32 {
        match self {
            MathFn::Sqrt => x.sqrt(),
            MathFn::Floor => quiet_f32(x.floor()),
            MathFn::Ceil => quiet_f32(x.ceil()),
            MathFn::Trunc => quiet_f32(x.trunc()),
            MathFn::Round => x.round(),
            MathFn::Abs => x.abs(),
            _ => self.eval_f64(f64::from(x)) as f32,
        }
    }

    /// [`MathFn::eval_f64`] by selector; an unknown selector (excluded by the verifier) gives
    /// NaN.
    #[inline]
    pub fn eval_f64_sel(sel: u16, x: f64) -> f64 {
        MathFn::from_u16(sel).map_or(f64::NAN, |f| f.eval_f64(x))
    }

    /// [`MathFn::eval_f32`] by selector; an unknown selector gives NaN.
    #[inline]
    pub fn eval_f32_sel(sel: u16, x: f32) -> f32 {
        MathFn::from_u16(sel).map_or(f32::NAN, |f| f.eval_f32(x))
    }

    /// Looks a function up by its `Math` method name.
    pub fn by_name(name: &str) -> Option<MathFn> {
        MathFn::ALL.iter().copied().find(|f| f.name() == name)
    }
}

/// `x` with a NaN quieted (its payload kept): IEEE 754's roundToIntegral returns a quiet NaN,
/// as the JIT's rounding instructions do, while Rust's `floor` returns a signalling NaN as is.
fn quiet_f64(x: f64) -> f64 {
    if x.is_nan() {
        f64::from_bits(x.to_bits() | 1 << 51)
    } else {
        x
    }
}

/// [`quiet_f64`] for a float32.
fn quiet_f32(x: f32) -> f32 {
    if x.is_nan() {
        f32::from_bits(x.to_bits() | 1 << 22)
    } else {
        x
    }
}

/// Invokes `$m!` with the whole opcode table: `Name "mnemonic" [a, b, c] "semantics";` rows.
#[macro_export]
macro_rules! for_each_opcode {
    ($m:ident) => {
        $m! {
        Nop            "nop"            [N, N, N] "does nothing";
        Mov            "mov"            [Dst(ANY), Src(ANY), N] "r[a] := r[b]; both registers have the same type";
        LoadK          "loadk"          [Dst(ANY), Const, N] "r[a] := K[bc]; the constant's kind matches r[a]'s type (number bits or String)";
        LoadI          "loadi"          [Dst(INTLIKE), Imm32, N] "r[a] := bc as i32, sign-extended (the compiler only uses values canonical for r[a]'s type)";
        LoadNull       "loadnull"       [Dst(REF), N, N] "r[a] := null";
        Jmp            "jmp"            [N, Target, N] "pc := bc";
        JmpIf          "jmpif"          [Src(T_BOOL), Target, N] "if r[a] then pc := bc";
        JmpIfNot       "jmpifnot"       [Src(T_BOOL), Target, N] "if !r[a] then pc := bc";
        Call           "call"           [Special, Special, Func] "call F[c] with arguments r[b..b+n]; r[a] := result (a ignored for void); the callee's frame starts at caller register b";
        Ret            "ret"            [Special, N, N] "return r[a] (type of the function's result); ownership bit false";
        RetOwn         "retown"         [Special, Src(T_BOOL), N] "return r[a] (a reference) with ownership bit r[b]";
        RetVoid        "retvoid"        [N, N, N] "return from a void function";
        TakeOwn        "takeown"        [Dst(T_BOOL), N, N] "r[a] := ownership bit of the last returned value";
        AddI8          "add.i8"         [Dst(T_I8), Src(T_I8), Src(T_I8)] "r[a] := r[b] + r[c] (wrapping)";
        SubI8          "sub.i8"         [Dst(T_I8), Src(T_I8), Src(T_I8)] "r[a] := r[b] - r[c] (wrapping)";
        MulI8          "mul.i8"         [Dst(T_I8), Src(T_I8), Src(T_I8)] "r[a] := r[b] * r[c] (wrapping)";
        DivI8          "div.i8"         [Dst(T_I8), Src(T_I8), Src(T_I8)] "r[a] := r[b] / r[c] (signed, truncating; E-DIVZERO, E-OVERFLOW on MIN / -1)";
        RemI8          "rem.i8"         [Dst(T_I8), Src(T_I8), Src(T_I8)] "r[a] := r[b] % r[c] (sign of the dividend; MIN % -1 = 0; E-DIVZERO)";
        NegI8          "neg.i8"         [Dst(T_I8), Src(T_I8), N] "r[a] := -r[b] (wrapping)";
        AddU8          "add.u8"         [Dst(T_U8), Src(T_U8), Src(T_U8)] "r[a] := r[b] + r[c] (wrapping)";
        SubU8          "sub.u8"         [Dst(T_U8), Src(T_U8), Src(T_U8)] "r[a] := r[b] - r[c] (wrapping)";
        MulU8          "mul.u8"         [Dst(T_U8), Src(T_U8), Src(T_U8)] "r[a] := r[b] * r[c] (wrapping)";
        DivU8          "div.u8"         [Dst(T_U8), Src(T_U8), Src(T_U8)] "r[a] := r[b] / r[c] (unsigned; E-DIVZERO)";
        RemU8          "rem.u8"         [Dst(T_U8), Src(T_U8), Src(T_U8)] "r[a] := r[b] % r[c] (unsigned; E-DIVZERO)";
        NegU8          "neg.u8"         [Dst(T_U8), Src(T_U8), N] "r[a] := -r[b] (wrapping)";
        AddI16         "add.i16"        [Dst(T_I16), Src(T_I16), Src(T_I16)] "r[a] := r[b] + r[c] (wrapping)";
        SubI16         "sub.i16"        [Dst(T_I16), Src(T_I16), Src(T_I16)] "r[a] := r[b] - r[c] (wrapping)";
        MulI16         "mul.i16"        [Dst(T_I16), Src(T_I16), Src(T_I16)] "r[a] := r[b] * r[c] (wrapping)";
        DivI16         "div.i16"        [Dst(T_I16), Src(T_I16), Src(T_I16)] "r[a] := r[b] / r[c] (signed, truncating; E-DIVZERO, E-OVERFLOW on MIN / -1)";
        RemI16         "rem.i16"        [Dst(T_I16), Src(T_I16), Src(T_I16)] "r[a] := r[b] % r[c] (sign of the dividend; MIN % -1 = 0; E-DIVZERO)";
        NegI16         "neg.i16"        [Dst(T_I16), Src(T_I16), N] "r[a] := -r[b] (wrapping)";
        AddU16         "add.u16"        [Dst(T_U16), Src(T_U16), Src(T_U16)] "r[a] := r[b] + r[c] (wrapping)";
        SubU16         "sub.u16"        [Dst(T_U16), Src(T_U16), Src(T_U16)] "r[a] := r[b] - r[c] (wrapping)";
        MulU16         "mul.u16"        [Dst(T_U16), Src(T_U16), Src(T_U16)] "r[a] := r[b] * r[c] (wrapping)";
        DivU16         "div.u16"        [Dst(T_U16), Src(T_U16), Src(T_U16)] "r[a] := r[b] / r[c] (unsigned; E-DIVZERO)";
        RemU16         "rem.u16"        [Dst(T_U16), Src(T_U16), Src(T_U16)] "r[a] := r[b] % r[c] (unsigned; E-DIVZERO)";
        NegU16         "neg.u16"        [Dst(T_U16), Src(T_U16), N] "r[a] := -r[b] (wrapping)";
        AddI32         "add.i32"        [Dst(T_I32), Src(T_I32), Src(T_I32)] "r[a] := r[b] + r[c] (wrapping)";
        SubI32         "sub.i32"        [Dst(T_I32), Src(T_I32), Src(T_I32)] "r[a] := r[b] - r[c] (wrapping)";
        MulI32         "mul.i32"        [Dst(T_I32), Src(T_I32), Src(T_I32)] "r[a] := r[b] * r[c] (wrapping)";
        DivI32         "div.i32"        [Dst(T_I32), Src(T_I32), Src(T_I32)] "r[a] := r[b] / r[c] (signed, truncating; E-DIVZERO, E-OVERFLOW on MIN / -1)";
        RemI32         "rem.i32"        [Dst(T_I32), Src(T_I32), Src(T_I32)] "r[a] := r[b] % r[c] (sign of the dividend; MIN % -1 = 0; E-DIVZERO)";
        NegI32         "neg.i32"        [Dst(T_I32), Src(T_I32), N] "r[a] := -r[b] (wrapping)";
        AddU32         "add.u32"        [Dst(T_U32), Src(T_U32), Src(T_U32)] "r[a] := r[b] + r[c] (wrapping)";
        SubU32         "sub.u32"        [Dst(T_U32), Src(T_U32), Src(T_U32)] "r[a] := r[b] - r[c] (wrapping)";
        MulU32         "mul.u32"        [Dst(T_U32), Src(T_U32), Src(T_U32)] "r[a] := r[b] * r[c] (wrapping)";
        DivU32         "div.u32"        [Dst(T_U32), Src(T_U32), Src(T_U32)] "r[a] := r[b] / r[c] (unsigned; E-DIVZERO)";
        RemU32         "rem.u32"        [Dst(T_U32), Src(T_U32), Src(T_U32)] "r[a] := r[b] % r[c] (unsigned; E-DIVZERO)";
        NegU32         "neg.u32"        [Dst(T_U32), Src(T_U32), N] "r[a] := -r[b] (wrapping)";
        AddI64         "add.i64"        [Dst(T_I64), Src(T_I64), Src(T_I64)] "r[a] := r[b] + r[c] (wrapping)";
        SubI64         "sub.i64"        [Dst(T_I64), Src(T_I64), Src(T_I64)] "r[a] := r[b] - r[c] (wrapping)";
        MulI64         "mul.i64"        [Dst(T_I64), Src(T_I64), Src(T_I64)] "r[a] := r[b] * r[c] (wrapping)";
        DivI64         "div.i64"        [Dst(T_I64), Src(T_I64), Src(T_I64)] "r[a] := r[b] / r[c] (signed, truncating; E-DIVZERO, E-OVERFLOW on MIN / -1)";
        RemI64         "rem.i64"        [Dst(T_I64), Src(T_I64), Src(T_I64)] "r[a] := r[b] % r[c] (sign of the dividend; MIN % -1 = 0; E-DIVZERO)";
        NegI64         "neg.i64"        [Dst(T_I64), Src(T_I64), N] "r[a] := -r[b] (wrapping)";
        AddU64         "add.u64"        [Dst(T_U64), Src(T_U64), Src(T_U64)] "r[a] := r[b] + r[c] (wrapping)";
        SubU64         "sub.u64"        [Dst(T_U64), Src(T_U64), Src(T_U64)] "r[a] := r[b] - r[c] (wrapping)";
        MulU64         "mul.u64"        [Dst(T_U64), Src(T_U64), Src(T_U64)] "r[a] := r[b] * r[c] (wrapping)";
        DivU64         "div.u64"        [Dst(T_U64), Src(T_U64), Src(T_U64)] "r[a] := r[b] / r[c] (unsigned; E-DIVZERO)";
        RemU64         "rem.u64"        [Dst(T_U64), Src(T_U64), Src(T_U64)] "r[a] := r[b] % r[c] (unsigned; E-DIVZERO)";
        NegU64         "neg.u64"        [Dst(T_U64), Src(T_U64), N] "r[a] := -r[b] (wrapping)";
        AddF32         "add.f32"        [Dst(T_F32), Src(T_F32), Src(T_F32)] "r[a] := r[b] + r[c]";
        SubF32         "sub.f32"        [Dst(T_F32), Src(T_F32), Src(T_F32)] "r[a] := r[b] - r[c]";
        MulF32         "mul.f32"        [Dst(T_F32), Src(T_F32), Src(T_F32)] "r[a] := r[b] * r[c]";
        DivF32         "div.f32"        [Dst(T_F32), Src(T_F32), Src(T_F32)] "r[a] := r[b] / r[c] (IEEE)";
        RemF32         "rem.f32"        [Dst(T_F32), Src(T_F32), Src(T_F32)] "r[a] := fmod(r[b], r[c])";
        NegF32         "neg.f32"        [Dst(T_F32), Src(T_F32), N] "r[a] := -r[b]";
        AddF64         "add.f64"        [Dst(T_F64), Src(T_F64), Src(T_F64)] "r[a] := r[b] + r[c]";
        SubF64         "sub.f64"        [Dst(T_F64), Src(T_F64), Src(T_F64)] "r[a] := r[b] - r[c]";
        MulF64         "mul.f64"        [Dst(T_F64), Src(T_F64), Src(T_F64)] "r[a] := r[b] * r[c]";
        DivF64         "div.f64"        [Dst(T_F64), Src(T_F64), Src(T_F64)] "r[a] := r[b] / r[c] (IEEE)";
        RemF64         "rem.f64"        [Dst(T_F64), Src(T_F64), Src(T_F64)] "r[a] := fmod(r[b], r[c])";
        NegF64         "neg.f64"        [Dst(T_F64), Src(T_F64), N] "r[a] := -r[b]";
        AddImmI32      "addi.i32"       [Dst(T_I32), Src(T_I32), Imm16] "r[a] := r[b] + (c as i16) (wrapping)";
        AddImmI64      "addi.i64"       [Dst(T_I64), Src(T_I64), Imm16] "r[a] := r[b] + (c as i16) (wrapping)";
        ShlI8          "shl.i8"         [Dst(T_I8), Src(T_I8), Src(INT)] "r[a] := r[b] << (r[c] mod width)";
        ShrI8          "shr.i8"         [Dst(T_I8), Src(T_I8), Src(INT)] "r[a] := r[b] >> (r[c] mod width) (arithmetic)";
        UshrI8         "ushr.i8"        [Dst(T_I8), Src(T_I8), Src(INT)] "r[a] := r[b] >>> (r[c] mod width) (logical at the type's width)";
        NotI8          "not.i8"         [Dst(T_I8), Src(T_I8), N] "r[a] := ~r[b]";
        MinI8          "min.i8"         [Dst(T_I8), Src(T_I8), Src(T_I8)] "r[a] := min(r[b], r[c])";
        MaxI8          "max.i8"         [Dst(T_I8), Src(T_I8), Src(T_I8)] "r[a] := max(r[b], r[c])";
        AbsI8          "abs.i8"         [Dst(T_I8), Src(T_I8), N] "r[a] := |r[b]| (wrapping: abs(MIN) = MIN)";
        ShlU8          "shl.u8"         [Dst(T_U8), Src(T_U8), Src(INT)] "r[a] := r[b] << (r[c] mod width)";
        ShrU8          "shr.u8"         [Dst(T_U8), Src(T_U8), Src(INT)] "r[a] := r[b] >> (r[c] mod width) (logical)";
        UshrU8         "ushr.u8"        [Dst(T_U8), Src(T_U8), Src(INT)] "r[a] := r[b] >>> (r[c] mod width) (logical at the type's width)";
        NotU8          "not.u8"         [Dst(T_U8), Src(T_U8), N] "r[a] := ~r[b]";
        MinU8          "min.u8"         [Dst(T_U8), Src(T_U8), Src(T_U8)] "r[a] := min(r[b], r[c])";
        MaxU8          "max.u8"         [Dst(T_U8), Src(T_U8), Src(T_U8)] "r[a] := max(r[b], r[c])";
        ShlI16         "shl.i16"        [Dst(T_I16), Src(T_I16), Src(INT)] "r[a] := r[b] << (r[c] mod width)";
        ShrI16         "shr.i16"        [Dst(T_I16), Src(T_I16), Src(INT)] "r[a] := r[b] >> (r[c] mod width) (arithmetic)";
        UshrI16        "ushr.i16"       [Dst(T_I16), Src(T_I16), Src(INT)] "r[a] := r[b] >>> (r[c] mod width) (logical at the type's width)";
        NotI16         "not.i16"        [Dst(T_I16), Src(T_I16), N] "r[a] := ~r[b]";
        MinI16         "min.i16"        [Dst(T_I16), Src(T_I16), Src(T_I16)] "r[a] := min(r[b], r[c])";
        MaxI16         "max.i16"        [Dst(T_I16), Src(T_I16), Src(T_I16)] "r[a] := max(r[b], r[c])";
        AbsI16         "abs.i16"        [Dst(T_I16), Src(T_I16), N] "r[a] := |r[b]| (wrapping: abs(MIN) = MIN)";
        ShlU16         "shl.u16"        [Dst(T_U16), Src(T_U16), Src(INT)] "r[a] := r[b] << (r[c] mod width)";
        ShrU16         "shr.u16"        [Dst(T_U16), Src(T_U16), Src(INT)] "r[a] := r[b] >> (r[c] mod width) (logical)";
        UshrU16        "ushr.u16"       [Dst(T_U16), Src(T_U16), Src(INT)] "r[a] := r[b] >>> (r[c] mod width) (logical at the type's width)";
        NotU16         "not.u16"        [Dst(T_U16), Src(T_U16), N] "r[a] := ~r[b]";
        MinU16         "min.u16"        [Dst(T_U16), Src(T_U16), Src(T_U16)] "r[a] := min(r[b], r[c])";
        MaxU16         "max.u16"        [Dst(T_U16), Src(T_U16), Src(T_U16)] "r[a] := max(r[b], r[c])";
        ShlI32         "shl.i32"        [Dst(T_I32), Src(T_I32), Src(INT)] "r[a] := r[b] << (r[c] mod width)";
        ShrI32         "shr.i32"        [Dst(T_I32), Src(T_I32), Src(INT)] "r[a] := r[b] >> (r[c] mod width) (arithmetic)";
        UshrI32        "ushr.i32"       [Dst(T_I32), Src(T_I32), Src(INT)] "r[a] := r[b] >>> (r[c] mod width) (logical at the type's width)";
        NotI32         "not.i32"        [Dst(T_I32), Src(T_I32), N] "r[a] := ~r[b]";
        MinI32         "min.i32"        [Dst(T_I32), Src(T_I32), Src(T_I32)] "r[a] := min(r[b], r[c])";
        MaxI32         "max.i32"        [Dst(T_I32), Src(T_I32), Src(T_I32)] "r[a] := max(r[b], r[c])";
        AbsI32         "abs.i32"        [Dst(T_I32), Src(T_I32), N] "r[a] := |r[b]| (wrapping: abs(MIN) = MIN)";
        ShlU32         "shl.u32"        [Dst(T_U32), Src(T_U32), Src(INT)] "r[a] := r[b] << (r[c] mod width)";
        ShrU32         "shr.u32"        [Dst(T_U32), Src(T_U32), Src(INT)] "r[a] := r[b] >> (r[c] mod width) (logical)";
        UshrU32        "ushr.u32"       [Dst(T_U32), Src(T_U32), Src(INT)] "r[a] := r[b] >>> (r[c] mod width) (logical at the type's width)";
        NotU32         "not.u32"        [Dst(T_U32), Src(T_U32), N] "r[a] := ~r[b]";
        MinU32         "min.u32"        [Dst(T_U32), Src(T_U32), Src(T_U32)] "r[a] := min(r[b], r[c])";
        MaxU32         "max.u32"        [Dst(T_U32), Src(T_U32), Src(T_U32)] "r[a] := max(r[b], r[c])";
        ShlI64         "shl.i64"        [Dst(T_I64), Src(T_I64), Src(INT)] "r[a] := r[b] << (r[c] mod width)";
        ShrI64         "shr.i64"        [Dst(T_I64), Src(T_I64), Src(INT)] "r[a] := r[b] >> (r[c] mod width) (arithmetic)";
        UshrI64        "ushr.i64"       [Dst(T_I64), Src(T_I64), Src(INT)] "r[a] := r[b] >>> (r[c] mod width) (logical at the type's width)";
        NotI64         "not.i64"        [Dst(T_I64), Src(T_I64), N] "r[a] := ~r[b]";
        MinI64         "min.i64"        [Dst(T_I64), Src(T_I64), Src(T_I64)] "r[a] := min(r[b], r[c])";
        MaxI64         "max.i64"        [Dst(T_I64), Src(T_I64), Src(T_I64)] "r[a] := max(r[b], r[c])";
        AbsI64         "abs.i64"        [Dst(T_I64), Src(T_I64), N] "r[a] := |r[b]| (wrapping: abs(MIN) = MIN)";
        ShlU64         "shl.u64"        [Dst(T_U64), Src(T_U64), Src(INT)] "r[a] := r[b] << (r[c] mod width)";
        ShrU64         "shr.u64"        [Dst(T_U64), Src(T_U64), Src(INT)] "r[a] := r[b] >> (r[c] mod width) (logical)";
        UshrU64        "ushr.u64"       [Dst(T_U64), Src(T_U64), Src(INT)] "r[a] := r[b] >>> (r[c] mod width) (logical at the type's width)";
        NotU64         "not.u64"        [Dst(T_U64), Src(T_U64), N] "r[a] := ~r[b]";
        MinU64         "min.u64"        [Dst(T_U64), Src(T_U64), Src(T_U64)] "r[a] := min(r[b], r[c])";
        MaxU64         "max.u64"        [Dst(T_U64), Src(T_U64), Src(T_U64)] "r[a] := max(r[b], r[c])";
        AndI8          "and.i8"         [Dst(T_I8), Src(T_I8), Src(T_I8)] "r[a] := r[b] & r[c]";
        OrI8           "or.i8"          [Dst(T_I8), Src(T_I8), Src(T_I8)] "r[a] := r[b] | r[c]";
        XorI8          "xor.i8"         [Dst(T_I8), Src(T_I8), Src(T_I8)] "r[a] := r[b] ^ r[c]";
        AndU8          "and.u8"         [Dst(T_U8), Src(T_U8), Src(T_U8)] "r[a] := r[b] & r[c]";
        OrU8           "or.u8"          [Dst(T_U8), Src(T_U8), Src(T_U8)] "r[a] := r[b] | r[c]";
        XorU8          "xor.u8"         [Dst(T_U8), Src(T_U8), Src(T_U8)] "r[a] := r[b] ^ r[c]";
        AndI16         "and.i16"        [Dst(T_I16), Src(T_I16), Src(T_I16)] "r[a] := r[b] & r[c]";
        OrI16          "or.i16"         [Dst(T_I16), Src(T_I16), Src(T_I16)] "r[a] := r[b] | r[c]";
        XorI16         "xor.i16"        [Dst(T_I16), Src(T_I16), Src(T_I16)] "r[a] := r[b] ^ r[c]";
        AndU16         "and.u16"        [Dst(T_U16), Src(T_U16), Src(T_U16)] "r[a] := r[b] & r[c]";
        OrU16          "or.u16"         [Dst(T_U16), Src(T_U16), Src(T_U16)] "r[a] := r[b] | r[c]";
        XorU16         "xor.u16"        [Dst(T_U16), Src(T_U16), Src(T_U16)] "r[a] := r[b] ^ r[c]";
        AndI32         "and.i32"        [Dst(T_I32), Src(T_I32), Src(T_I32)] "r[a] := r[b] & r[c]";
        OrI32          "or.i32"         [Dst(T_I32), Src(T_I32), Src(T_I32)] "r[a] := r[b] | r[c]";
        XorI32         "xor.i32"        [Dst(T_I32), Src(T_I32), Src(T_I32)] "r[a] := r[b] ^ r[c]";
        AndU32         "and.u32"        [Dst(T_U32), Src(T_U32), Src(T_U32)] "r[a] := r[b] & r[c]";
        OrU32          "or.u32"         [Dst(T_U32), Src(T_U32), Src(T_U32)] "r[a] := r[b] | r[c]";
        XorU32         "xor.u32"        [Dst(T_U32), Src(T_U32), Src(T_U32)] "r[a] := r[b] ^ r[c]";
        AndI64         "and.i64"        [Dst(T_I64), Src(T_I64), Src(T_I64)] "r[a] := r[b] & r[c]";
        OrI64          "or.i64"         [Dst(T_I64), Src(T_I64), Src(T_I64)] "r[a] := r[b] | r[c]";
        XorI64         "xor.i64"        [Dst(T_I64), Src(T_I64), Src(T_I64)] "r[a] := r[b] ^ r[c]";
        AndU64         "and.u64"        [Dst(T_U64), Src(T_U64), Src(T_U64)] "r[a] := r[b] & r[c]";
        OrU64          "or.u64"         [Dst(T_U64), Src(T_U64), Src(T_U64)] "r[a] := r[b] | r[c]";
        XorU64         "xor.u64"        [Dst(T_U64), Src(T_U64), Src(T_U64)] "r[a] := r[b] ^ r[c]";
        AndBool        "and.bool"       [Dst(T_BOOL), Src(T_BOOL), Src(T_BOOL)] "r[a] := r[b] & r[c]";
        OrBool         "or.bool"        [Dst(T_BOOL), Src(T_BOOL), Src(T_BOOL)] "r[a] := r[b] | r[c]";
        XorBool        "xor.bool"       [Dst(T_BOOL), Src(T_BOOL), Src(T_BOOL)] "r[a] := r[b] ^ r[c]";
        LNot           "lnot"           [Dst(T_BOOL), Src(T_BOOL), N] "r[a] := !r[b]";
        EqBool         "eq.bool"        [Dst(T_BOOL), Src(T_BOOL), Src(T_BOOL)] "r[a] := r[b] == r[c]";
        NeBool         "ne.bool"        [Dst(T_BOOL), Src(T_BOOL), Src(T_BOOL)] "r[a] := r[b] != r[c]";
        EqChar         "eq.char"        [Dst(T_BOOL), Src(T_CHAR), Src(T_CHAR)] "r[a] := r[b] == r[c]";
        NeChar         "ne.char"        [Dst(T_BOOL), Src(T_CHAR), Src(T_CHAR)] "r[a] := r[b] != r[c]";
        EqI8           "eq.i8"          [Dst(T_BOOL), Src(T_I8), Src(T_I8)] "r[a] := r[b] == r[c]";
        NeI8           "ne.i8"          [Dst(T_BOOL), Src(T_I8), Src(T_I8)] "r[a] := r[b] != r[c]";
        EqU8           "eq.u8"          [Dst(T_BOOL), Src(T_U8), Src(T_U8)] "r[a] := r[b] == r[c]";
        NeU8           "ne.u8"          [Dst(T_BOOL), Src(T_U8), Src(T_U8)] "r[a] := r[b] != r[c]";
        EqI16          "eq.i16"         [Dst(T_BOOL), Src(T_I16), Src(T_I16)] "r[a] := r[b] == r[c]";
        NeI16          "ne.i16"         [Dst(T_BOOL), Src(T_I16), Src(T_I16)] "r[a] := r[b] != r[c]";
        EqU16          "eq.u16"         [Dst(T_BOOL), Src(T_U16), Src(T_U16)] "r[a] := r[b] == r[c]";
        NeU16          "ne.u16"         [Dst(T_BOOL), Src(T_U16), Src(T_U16)] "r[a] := r[b] != r[c]";
        EqI32          "eq.i32"         [Dst(T_BOOL), Src(T_I32), Src(T_I32)] "r[a] := r[b] == r[c]";
        NeI32          "ne.i32"         [Dst(T_BOOL), Src(T_I32), Src(T_I32)] "r[a] := r[b] != r[c]";
        EqU32          "eq.u32"         [Dst(T_BOOL), Src(T_U32), Src(T_U32)] "r[a] := r[b] == r[c]";
        NeU32          "ne.u32"         [Dst(T_BOOL), Src(T_U32), Src(T_U32)] "r[a] := r[b] != r[c]";
        EqI64          "eq.i64"         [Dst(T_BOOL), Src(T_I64), Src(T_I64)] "r[a] := r[b] == r[c]";
        NeI64          "ne.i64"         [Dst(T_BOOL), Src(T_I64), Src(T_I64)] "r[a] := r[b] != r[c]";
        EqU64          "eq.u64"         [Dst(T_BOOL), Src(T_U64), Src(T_U64)] "r[a] := r[b] == r[c]";
        NeU64          "ne.u64"         [Dst(T_BOOL), Src(T_U64), Src(T_U64)] "r[a] := r[b] != r[c]";
        EqF32          "eq.f32"         [Dst(T_BOOL), Src(T_F32), Src(T_F32)] "r[a] := r[b] == r[c] (IEEE)";
        NeF32          "ne.f32"         [Dst(T_BOOL), Src(T_F32), Src(T_F32)] "r[a] := r[b] != r[c] (IEEE)";
        EqF64          "eq.f64"         [Dst(T_BOOL), Src(T_F64), Src(T_F64)] "r[a] := r[b] == r[c] (IEEE)";
        NeF64          "ne.f64"         [Dst(T_BOOL), Src(T_F64), Src(T_F64)] "r[a] := r[b] != r[c] (IEEE)";
        LtI8           "lt.i8"          [Dst(T_BOOL), Src(T_I8), Src(T_I8)] "r[a] := r[b] < r[c] (signed)";
        LeI8           "le.i8"          [Dst(T_BOOL), Src(T_I8), Src(T_I8)] "r[a] := r[b] <= r[c] (signed)";
        LtU8           "lt.u8"          [Dst(T_BOOL), Src(T_U8), Src(T_U8)] "r[a] := r[b] < r[c] (unsigned)";
        LeU8           "le.u8"          [Dst(T_BOOL), Src(T_U8), Src(T_U8)] "r[a] := r[b] <= r[c] (unsigned)";
        LtI16          "lt.i16"         [Dst(T_BOOL), Src(T_I16), Src(T_I16)] "r[a] := r[b] < r[c] (signed)";
        LeI16          "le.i16"         [Dst(T_BOOL), Src(T_I16), Src(T_I16)] "r[a] := r[b] <= r[c] (signed)";
        LtU16          "lt.u16"         [Dst(T_BOOL), Src(T_U16), Src(T_U16)] "r[a] := r[b] < r[c] (unsigned)";
        LeU16          "le.u16"         [Dst(T_BOOL), Src(T_U16), Src(T_U16)] "r[a] := r[b] <= r[c] (unsigned)";
        LtI32          "lt.i32"         [Dst(T_BOOL), Src(T_I32), Src(T_I32)] "r[a] := r[b] < r[c] (signed)";
        LeI32          "le.i32"         [Dst(T_BOOL), Src(T_I32), Src(T_I32)] "r[a] := r[b] <= r[c] (signed)";
        LtU32          "lt.u32"         [Dst(T_BOOL), Src(T_U32), Src(T_U32)] "r[a] := r[b] < r[c] (unsigned)";
        LeU32          "le.u32"         [Dst(T_BOOL), Src(T_U32), Src(T_U32)] "r[a] := r[b] <= r[c] (unsigned)";
        LtI64          "lt.i64"         [Dst(T_BOOL), Src(T_I64), Src(T_I64)] "r[a] := r[b] < r[c] (signed)";
        LeI64          "le.i64"         [Dst(T_BOOL), Src(T_I64), Src(T_I64)] "r[a] := r[b] <= r[c] (signed)";
        LtU64          "lt.u64"         [Dst(T_BOOL), Src(T_U64), Src(T_U64)] "r[a] := r[b] < r[c] (unsigned)";
        LeU64          "le.u64"         [Dst(T_BOOL), Src(T_U64), Src(T_U64)] "r[a] := r[b] <= r[c] (unsigned)";
        LtF32          "lt.f32"         [Dst(T_BOOL), Src(T_F32), Src(T_F32)] "r[a] := r[b] < r[c] (IEEE: false with NaN)";
        LeF32          "le.f32"         [Dst(T_BOOL), Src(T_F32), Src(T_F32)] "r[a] := r[b] <= r[c] (IEEE: false with NaN)";
        LtF64          "lt.f64"         [Dst(T_BOOL), Src(T_F64), Src(T_F64)] "r[a] := r[b] < r[c] (IEEE: false with NaN)";
        LeF64          "le.f64"         [Dst(T_BOOL), Src(T_F64), Src(T_F64)] "r[a] := r[b] <= r[c] (IEEE: false with NaN)";
        EqStr          "eq.str"         [Dst(T_BOOL), Src(T_STR), Src(T_STR)] "r[a] := contents of r[b] == contents of r[c] (null equals only null)";
        EqRef          "eq.ref"         [Dst(T_BOOL), Src(REF), Src(REF)] "r[a] := r[b] and r[c] are the same reference";
        WrapI8         "wrap.i8"        [Dst(T_I8), Src(INTLIKE), N] "r[a] := r[b]'s canonical bits re-canonicalised to i8 (integer/char conversion, §3.1)";
        WrapU8         "wrap.u8"        [Dst(T_U8), Src(INTLIKE), N] "r[a] := r[b]'s canonical bits re-canonicalised to u8 (integer/char conversion, §3.1)";
        WrapI16        "wrap.i16"       [Dst(T_I16), Src(INTLIKE), N] "r[a] := r[b]'s canonical bits re-canonicalised to i16 (integer/char conversion, §3.1)";
        WrapU16        "wrap.u16"       [Dst(T_U16), Src(INTLIKE), N] "r[a] := r[b]'s canonical bits re-canonicalised to u16 (integer/char conversion, §3.1)";
        WrapI32        "wrap.i32"       [Dst(T_I32), Src(INTLIKE), N] "r[a] := r[b]'s canonical bits re-canonicalised to i32 (integer/char conversion, §3.1)";
        WrapU32        "wrap.u32"       [Dst(T_U32), Src(INTLIKE), N] "r[a] := r[b]'s canonical bits re-canonicalised to u32 (integer/char conversion, §3.1)";
        WrapI64        "wrap.i64"       [Dst(T_I64), Src(INTLIKE), N] "r[a] := r[b]'s canonical bits re-canonicalised to i64 (integer/char conversion, §3.1)";
        WrapU64        "wrap.u64"       [Dst(T_U64), Src(INTLIKE), N] "r[a] := r[b]'s canonical bits re-canonicalised to u64 (integer/char conversion, §3.1)";
        WrapChar       "wrap.char"      [Dst(T_CHAR), Src(INTLIKE), N] "r[a] := r[b]'s canonical bits re-canonicalised to char (integer/char conversion, §3.1)";
        SToF32         "cvt.f32.s"      [Dst(T_F32), Src(INTLIKE), N] "r[a] := r[b] read as signed 64-bit, rounded to nearest-even";
        UToF32         "cvt.f32.u"      [Dst(T_F32), Src(INTLIKE), N] "r[a] := r[b] read as unsigned 64-bit, rounded to nearest-even";
        SToF64         "cvt.f64.s"      [Dst(T_F64), Src(INTLIKE), N] "r[a] := r[b] read as signed 64-bit, rounded to nearest-even";
        UToF64         "cvt.f64.u"      [Dst(T_F64), Src(INTLIKE), N] "r[a] := r[b] read as unsigned 64-bit, rounded to nearest-even";
        F32ToI8        "cvt.i8.f32"     [Dst(T_I8), Src(T_F32), N] "r[a] := r[b] toward zero, saturating, NaN -> 0";
        F32ToU8        "cvt.u8.f32"     [Dst(T_U8), Src(T_F32), N] "r[a] := r[b] toward zero, saturating, NaN -> 0";
        F32ToI16       "cvt.i16.f32"    [Dst(T_I16), Src(T_F32), N] "r[a] := r[b] toward zero, saturating, NaN -> 0";
        F32ToU16       "cvt.u16.f32"    [Dst(T_U16), Src(T_F32), N] "r[a] := r[b] toward zero, saturating, NaN -> 0";
        F32ToI32       "cvt.i32.f32"    [Dst(T_I32), Src(T_F32), N] "r[a] := r[b] toward zero, saturating, NaN -> 0";
        F32ToU32       "cvt.u32.f32"    [Dst(T_U32), Src(T_F32), N] "r[a] := r[b] toward zero, saturating, NaN -> 0";
        F32ToI64       "cvt.i64.f32"    [Dst(T_I64), Src(T_F32), N] "r[a] := r[b] toward zero, saturating, NaN -> 0";
        F32ToU64       "cvt.u64.f32"    [Dst(T_U64), Src(T_F32), N] "r[a] := r[b] toward zero, saturating, NaN -> 0";
        F64ToI8        "cvt.i8.f64"     [Dst(T_I8), Src(T_F64), N] "r[a] := r[b] toward zero, saturating, NaN -> 0";
        F64ToU8        "cvt.u8.f64"     [Dst(T_U8), Src(T_F64), N] "r[a] := r[b] toward zero, saturating, NaN -> 0";
        F64ToI16       "cvt.i16.f64"    [Dst(T_I16), Src(T_F64), N] "r[a] := r[b] toward zero, saturating, NaN -> 0";
        F64ToU16       "cvt.u16.f64"    [Dst(T_U16), Src(T_F64), N] "r[a] := r[b] toward zero, saturating, NaN -> 0";
        F64ToI32       "cvt.i32.f64"    [Dst(T_I32), Src(T_F64), N] "r[a] := r[b] toward zero, saturating, NaN -> 0";
        F64ToU32       "cvt.u32.f64"    [Dst(T_U32), Src(T_F64), N] "r[a] := r[b] toward zero, saturating, NaN -> 0";
        F64ToI64       "cvt.i64.f64"    [Dst(T_I64), Src(T_F64), N] "r[a] := r[b] toward zero, saturating, NaN -> 0";
        F64ToU64       "cvt.u64.f64"    [Dst(T_U64), Src(T_F64), N] "r[a] := r[b] toward zero, saturating, NaN -> 0";
        F32ToF64       "cvt.f64.f32"    [Dst(T_F64), Src(T_F32), N] "r[a] := r[b] (exact)";
        F64ToF32       "cvt.f32.f64"    [Dst(T_F32), Src(T_F64), N] "r[a] := r[b] rounded to nearest-even";
        Math1F32       "math1.f32"      [Dst(T_F32), Src(T_F32), MathFn] "r[a] := MATH1[c](r[b]) (sqrt, floor, ceil, …: see MathFn)";
        MinF32         "min.f32"        [Dst(T_F32), Src(T_F32), Src(T_F32)] "r[a] := min (the non-NaN operand if one is NaN)(r[b], r[c])";
        MaxF32         "max.f32"        [Dst(T_F32), Src(T_F32), Src(T_F32)] "r[a] := max (the non-NaN operand if one is NaN)(r[b], r[c])";
        PowF32         "pow.f32"        [Dst(T_F32), Src(T_F32), Src(T_F32)] "r[a] := pow(r[b], r[c]) (float32: computed in float64, rounded once)";
        Atan2F32       "atan2.f32"      [Dst(T_F32), Src(T_F32), Src(T_F32)] "r[a] := atan2(r[b], r[c]) (float32: computed in float64, rounded once)";
        FmaF32         "fma.f32"        [Dst(T_F32), Src(T_F32), Src(T_F32)] "r[a] := fma(r[a], r[b], r[c]) with one rounding (a is read, then written)";
        Math1F64       "math1.f64"      [Dst(T_F64), Src(T_F64), MathFn] "r[a] := MATH1[c](r[b]) (sqrt, floor, ceil, …: see MathFn)";
        MinF64         "min.f64"        [Dst(T_F64), Src(T_F64), Src(T_F64)] "r[a] := min (the non-NaN operand if one is NaN)(r[b], r[c])";
        MaxF64         "max.f64"        [Dst(T_F64), Src(T_F64), Src(T_F64)] "r[a] := max (the non-NaN operand if one is NaN)(r[b], r[c])";
        PowF64         "pow.f64"        [Dst(T_F64), Src(T_F64), Src(T_F64)] "r[a] := pow(r[b], r[c])";
        Atan2F64       "atan2.f64"      [Dst(T_F64), Src(T_F64), Src(T_F64)] "r[a] := atan2(r[b], r[c])";
        FmaF64         "fma.f64"        [Dst(T_F64), Src(T_F64), Src(T_F64)] "r[a] := fma(r[a], r[b], r[c]) with one rounding (a is read, then written)";
        ToStrBool      "tostr.bool"     [Dst(T_STR), Src(T_BOOL), N] "r[a] := string conversion of r[b] (§3.5, floats %g)";
        ToStrChar      "tostr.char"     [Dst(T_STR), Src(T_CHAR), N] "r[a] := string conversion of r[b] (§3.5, floats %g)";
        ToStrI8        "tostr.i8"       [Dst(T_STR), Src(T_I8), N] "r[a] := string conversion of r[b] (§3.5, floats %g)";
        ToStrU8        "tostr.u8"       [Dst(T_STR), Src(T_U8), N] "r[a] := string conversion of r[b] (§3.5, floats %g)";
        ToStrI16       "tostr.i16"      [Dst(T_STR), Src(T_I16), N] "r[a] := string conversion of r[b] (§3.5, floats %g)";
        ToStrU16       "tostr.u16"      [Dst(T_STR), Src(T_U16), N] "r[a] := string conversion of r[b] (§3.5, floats %g)";
        ToStrI32       "tostr.i32"      [Dst(T_STR), Src(T_I32), N] "r[a] := string conversion of r[b] (§3.5, floats %g)";
        ToStrU32       "tostr.u32"      [Dst(T_STR), Src(T_U32), N] "r[a] := string conversion of r[b] (§3.5, floats %g)";
        ToStrI64       "tostr.i64"      [Dst(T_STR), Src(T_I64), N] "r[a] := string conversion of r[b] (§3.5, floats %g)";
        ToStrU64       "tostr.u64"      [Dst(T_STR), Src(T_U64), N] "r[a] := string conversion of r[b] (§3.5, floats %g)";
        ToStrF32       "tostr.f32"      [Dst(T_STR), Src(T_F32), N] "r[a] := string conversion of r[b] (§3.5, floats %g)";
        ToStrF64       "tostr.f64"      [Dst(T_STR), Src(T_F64), N] "r[a] := string conversion of r[b] (§3.5, floats %g)";
        Concat         "concat"         [Dst(T_STR), Src(T_STR), Src(T_STR)] "r[a] := r[b] ++ r[c] (null reads as \"null\")";
        FmtFixed       "fmt.fixed"      [Dst(T_STR), Src(T_F64), Imm16] "r[a] := r[b] in fixed notation with c decimals (C %.Nf)";
        Print          "print"          [Src(T_STR), Imm16, N] "write r[a] (null: \"null\"); b bit0 = stderr, bit1 = newline after";
        NewArr         "newarr"         [Dst(ARRAY), Src(T_I64), N] "r[a] := new zero-filled array of r[b] elements of r[a]'s element type; E-SIZE if negative or too large";
        ArrLen         "arrlen"         [Dst(T_I64), Src(ARRAY), N] "r[a] := r[b].count(); E-NULL";
        ArrGetBool     "aget.bool"      [Dst(T_BOOL), Src(ARRAY), Src(T_I64)] "r[a] := r[b][r[c]]; E-NULL, E-BOUNDS";
        ArrSetBool     "aset.bool"      [Src(ARRAY), Src(T_I64), Src(T_BOOL)] "r[a][r[b]] := r[c]; E-NULL, E-BOUNDS";
        ArrGetChar     "aget.char"      [Dst(T_CHAR), Src(ARRAY), Src(T_I64)] "r[a] := r[b][r[c]]; E-NULL, E-BOUNDS";
        ArrSetChar     "aset.char"      [Src(ARRAY), Src(T_I64), Src(T_CHAR)] "r[a][r[b]] := r[c]; E-NULL, E-BOUNDS";
        ArrGetI8       "aget.i8"        [Dst(T_I8), Src(ARRAY), Src(T_I64)] "r[a] := r[b][r[c]]; E-NULL, E-BOUNDS";
        ArrSetI8       "aset.i8"        [Src(ARRAY), Src(T_I64), Src(T_I8)] "r[a][r[b]] := r[c]; E-NULL, E-BOUNDS";
        ArrGetU8       "aget.u8"        [Dst(T_U8), Src(ARRAY), Src(T_I64)] "r[a] := r[b][r[c]]; E-NULL, E-BOUNDS";
        ArrSetU8       "aset.u8"        [Src(ARRAY), Src(T_I64), Src(T_U8)] "r[a][r[b]] := r[c]; E-NULL, E-BOUNDS";
        ArrGetI16      "aget.i16"       [Dst(T_I16), Src(ARRAY), Src(T_I64)] "r[a] := r[b][r[c]]; E-NULL, E-BOUNDS";
        ArrSetI16      "aset.i16"       [Src(ARRAY), Src(T_I64), Src(T_I16)] "r[a][r[b]] := r[c]; E-NULL, E-BOUNDS";
        ArrGetU16      "aget.u16"       [Dst(T_U16), Src(ARRAY), Src(T_I64)] "r[a] := r[b][r[c]]; E-NULL, E-BOUNDS";
        ArrSetU16      "aset.u16"       [Src(ARRAY), Src(T_I64), Src(T_U16)] "r[a][r[b]] := r[c]; E-NULL, E-BOUNDS";
        ArrGetI32      "aget.i32"       [Dst(T_I32), Src(ARRAY), Src(T_I64)] "r[a] := r[b][r[c]]; E-NULL, E-BOUNDS";
        ArrSetI32      "aset.i32"       [Src(ARRAY), Src(T_I64), Src(T_I32)] "r[a][r[b]] := r[c]; E-NULL, E-BOUNDS";
        ArrGetU32      "aget.u32"       [Dst(T_U32), Src(ARRAY), Src(T_I64)] "r[a] := r[b][r[c]]; E-NULL, E-BOUNDS";
        ArrSetU32      "aset.u32"       [Src(ARRAY), Src(T_I64), Src(T_U32)] "r[a][r[b]] := r[c]; E-NULL, E-BOUNDS";
        ArrGetI64      "aget.i64"       [Dst(T_I64), Src(ARRAY), Src(T_I64)] "r[a] := r[b][r[c]]; E-NULL, E-BOUNDS";
        ArrSetI64      "aset.i64"       [Src(ARRAY), Src(T_I64), Src(T_I64)] "r[a][r[b]] := r[c]; E-NULL, E-BOUNDS";
        ArrGetU64      "aget.u64"       [Dst(T_U64), Src(ARRAY), Src(T_I64)] "r[a] := r[b][r[c]]; E-NULL, E-BOUNDS";
        ArrSetU64      "aset.u64"       [Src(ARRAY), Src(T_I64), Src(T_U64)] "r[a][r[b]] := r[c]; E-NULL, E-BOUNDS";
        ArrGetF32      "aget.f32"       [Dst(T_F32), Src(ARRAY), Src(T_I64)] "r[a] := r[b][r[c]]; E-NULL, E-BOUNDS";
        ArrSetF32      "aset.f32"       [Src(ARRAY), Src(T_I64), Src(T_F32)] "r[a][r[b]] := r[c]; E-NULL, E-BOUNDS";
        ArrGetF64      "aget.f64"       [Dst(T_F64), Src(ARRAY), Src(T_I64)] "r[a] := r[b][r[c]]; E-NULL, E-BOUNDS";
        ArrSetF64      "aset.f64"       [Src(ARRAY), Src(T_I64), Src(T_F64)] "r[a][r[b]] := r[c]; E-NULL, E-BOUNDS";
        ArrGetRef      "aget.ref"       [Dst(REF), Src(ARRAY), Src(T_I64)] "r[a] := r[b][r[c]] (element of reference type); E-NULL, E-BOUNDS";
        ArrSetRef      "aset.ref"       [Src(ARRAY), Src(T_I64), Src(REF)] "r[a][r[b]] := r[c] (element of reference type); E-NULL, E-BOUNDS";
        NewObj         "newobj"         [Dst(OBJECT), Class, N] "r[a] := new zero-filled instance of class bc";
        GetField       "getfield"       [Special, Src(OBJECT), Field] "r[a] := r[b].field[c]; E-NULL, E-DROPPED";
        SetField       "setfield"       [Src(OBJECT), Field, Special] "r[a].field[b] := r[c]; E-NULL, E-DROPPED";
        ChkObj         "chk.obj"        [Src(OBJECT), Func, N] "nothing if r[a] is a live object, else E-NULL / E-DROPPED: r[a] is the receiver of a call of F[b]";
        GetStatic      "getstatic"      [Special, Static, N] "r[a] := static[b]";
        SetStatic      "setstatic"      [Special, Static, N] "static[b] := r[a]";
        Drop           "drop"           [Src(REF), Src(T_BOOL), N] "if r[b] (the owns-flag) then release the object r[a] (null or already released: nothing)";
        BufNew             "buf.new"            [Dst(BUFFER), Src(T_U64), N] "r[a] := new buffer of r[b] elements of Device memory, zero-filled; XPU-E-OOM";
        BufNewEmpty        "buf.empty"          [Dst(BUFFER), Src(T_U64), N] "r[a] := new unallocated buffer of r[b] elements (the (0, n) constructor)";
        BufLength          "buf.len"            [Dst(T_U64), Src(DEVMEM), N] "r[a] := r[b].length() (host and device; in device code r[b] may be a shared array: its length, for a dynamic one the launch's sharedBytes / element size); E-NULL";
        BufAllocate        "buf.allocate"       [Src(BUFFER), Src(T_I32), Imm16] "r[a].allocate(kind r[b]), or allocate() keeping the current kind when c = 1 (r[b] unused); XPU-E-KIND, XPU-E-SLICE (view), XPU-E-OOM";
        BufUpload          "buf.upload"         [Src(BUFFER), Src(ARRAY), N] "blocking copy of host array r[b] into r[a]; XPU-E-LENGTH, XPU-E-FREED";
        BufUploadN         "buf.uploadn"        [Src(BUFFER), Src(ARRAY), Src(T_I64)] "copy the first min(max(r[c],0), length, count) elements of r[b] into r[a]; XPU-E-FREED";
        BufDownload        "buf.download"       [Src(BUFFER), Src(ARRAY), N] "blocking copy of r[a] into host array r[b]; XPU-E-LENGTH, XPU-E-FREED";
        BufDownloadN       "buf.downloadn"      [Src(BUFFER), Src(ARRAY), Src(T_I64)] "copy the first min(max(r[c],0), length, count) elements of r[a] into r[b]; XPU-E-FREED";
        BufUploadAsync     "buf.uploadasync"    [Src(BUFFER), Src(ARRAY), Src(T_STREAM)] "upload queued on stream r[c]; XPU-E-LENGTH, XPU-E-FREED";
        BufDownloadAsync   "buf.downloadasync"  [Src(BUFFER), Src(ARRAY), Src(T_STREAM)] "download queued on stream r[c]; XPU-E-LENGTH, XPU-E-FREED";
        BufHostStore       "buf.hoststore"      [Src(BUFFER), Src(ARRAY), N] "direct copy of r[b] into host-accessible storage r[a]; XPU-E-HOSTACCESS, XPU-E-LENGTH, XPU-E-FREED";
        BufHostLoad        "buf.hostload"       [Src(BUFFER), Src(ARRAY), N] "direct copy of host-accessible storage r[a] into r[b]; XPU-E-HOSTACCESS, XPU-E-LENGTH, XPU-E-FREED";
        BufFree            "buf.free"           [Src(BUFFER), N, N] "r[a].free(): release the storage now (idempotent; nothing on a view)";
        BufSlice           "buf.slice"          [Dst(BUFFER), Src(BUFFER), Special] "r[a] := view of r[b] at offset r[c] with r[c+1] elements (both uint64); XPU-E-SLICE, XPU-E-FREED";
        StreamCurrent      "stream.current"     [Dst(T_STREAM), N, N] "r[a] := the default stream";
        StreamCreate       "stream.create"      [Dst(T_STREAM), N, N] "r[a] := a new stream";
        StreamSync         "stream.sync"        [Src(T_STREAM), N, N] "wait for r[a]'s work (default stream: all work); reports a pending kernel fault";
        StreamDestroy      "stream.destroy"     [Src(T_STREAM), N, N] "wait for and destroy r[a] (idempotent; no-op on the default stream)";
        DeviceForce        "device.force"       [Src(T_STR), N, N] "Device.force(r[a]); XPU-E-BACKEND";
        DeviceBackend      "device.backend"     [Dst(T_STR), N, N] "r[a] := Device.activeBackend() (a device touch)";
        Launch             "launch"             [Special, Func, N] "launch kernel F[b]; registers a.. hold stream, grid x/y/z, block x/y/z, shared bytes (int64), then the kernel's parameters; XPU-E-LAUNCH, XPU-E-FREED, E-NULL, kernel faults";
        Geom               "geom"               [Dst(T_U32), Imm16, N] "r[a] := geometry value b: 0-2 KernelThread.x/y/z, 3-5 Workgroup.x/y/z, 6-8 Workgroup.dimX/Y/Z, 9-11 KernelThread.globalIdX/Y/Z, 12-14 grid size in workgroups (internal), 15 Wave.width(), 16 Wave.laneId() (device only)";
        Barrier            "barrier"            [N, N, N] "Barrier.workgroup(): rendezvous of the workgroup (device only); XPU-E-DIVERGENT";
        SharedRef          "shared.ref"         [Dst(SHARED), Imm16, N] "r[a] := the workgroup's shared array b of this kernel (device only)";
        DevGetI8           "ld.i8"              [Dst(T_I8), Src(DEVMEM), Src(T_I64)] "r[a] := element r[c] of buffer or shared array r[b] (device only); XPU-E-BOUNDS";
        DevSetI8           "st.i8"              [Src(DEVMEM), Src(T_I64), Src(T_I8)] "element r[b] of buffer or shared array r[a] := r[c] (device only); XPU-E-BOUNDS";
        DevGetU8           "ld.u8"              [Dst(T_U8), Src(DEVMEM), Src(T_I64)] "r[a] := element r[c] of buffer or shared array r[b] (device only); XPU-E-BOUNDS";
        DevSetU8           "st.u8"              [Src(DEVMEM), Src(T_I64), Src(T_U8)] "element r[b] of buffer or shared array r[a] := r[c] (device only); XPU-E-BOUNDS";
        DevGetI16          "ld.i16"             [Dst(T_I16), Src(DEVMEM), Src(T_I64)] "r[a] := element r[c] of buffer or shared array r[b] (device only); XPU-E-BOUNDS";
        DevSetI16          "st.i16"             [Src(DEVMEM), Src(T_I64), Src(T_I16)] "element r[b] of buffer or shared array r[a] := r[c] (device only); XPU-E-BOUNDS";
        DevGetU16          "ld.u16"             [Dst(T_U16), Src(DEVMEM), Src(T_I64)] "r[a] := element r[c] of buffer or shared array r[b] (device only); XPU-E-BOUNDS";
        DevSetU16          "st.u16"             [Src(DEVMEM), Src(T_I64), Src(T_U16)] "element r[b] of buffer or shared array r[a] := r[c] (device only); XPU-E-BOUNDS";
        DevGetI32          "ld.i32"             [Dst(T_I32), Src(DEVMEM), Src(T_I64)] "r[a] := element r[c] of buffer or shared array r[b] (device only); XPU-E-BOUNDS";
        DevSetI32          "st.i32"             [Src(DEVMEM), Src(T_I64), Src(T_I32)] "element r[b] of buffer or shared array r[a] := r[c] (device only); XPU-E-BOUNDS";
        DevGetU32          "ld.u32"             [Dst(T_U32), Src(DEVMEM), Src(T_I64)] "r[a] := element r[c] of buffer or shared array r[b] (device only); XPU-E-BOUNDS";
        DevSetU32          "st.u32"             [Src(DEVMEM), Src(T_I64), Src(T_U32)] "element r[b] of buffer or shared array r[a] := r[c] (device only); XPU-E-BOUNDS";
        DevGetI64          "ld.i64"             [Dst(T_I64), Src(DEVMEM), Src(T_I64)] "r[a] := element r[c] of buffer or shared array r[b] (device only); XPU-E-BOUNDS";
        DevSetI64          "st.i64"             [Src(DEVMEM), Src(T_I64), Src(T_I64)] "element r[b] of buffer or shared array r[a] := r[c] (device only); XPU-E-BOUNDS";
        DevGetU64          "ld.u64"             [Dst(T_U64), Src(DEVMEM), Src(T_I64)] "r[a] := element r[c] of buffer or shared array r[b] (device only); XPU-E-BOUNDS";
        DevSetU64          "st.u64"             [Src(DEVMEM), Src(T_I64), Src(T_U64)] "element r[b] of buffer or shared array r[a] := r[c] (device only); XPU-E-BOUNDS";
        DevGetF32          "ld.f32"             [Dst(T_F32), Src(DEVMEM), Src(T_I64)] "r[a] := element r[c] of buffer or shared array r[b] (device only); XPU-E-BOUNDS";
        DevSetF32          "st.f32"             [Src(DEVMEM), Src(T_I64), Src(T_F32)] "element r[b] of buffer or shared array r[a] := r[c] (device only); XPU-E-BOUNDS";
        DevGetF64          "ld.f64"             [Dst(T_F64), Src(DEVMEM), Src(T_I64)] "r[a] := element r[c] of buffer or shared array r[b] (device only); XPU-E-BOUNDS";
        DevSetF64          "st.f64"             [Src(DEVMEM), Src(T_I64), Src(T_F64)] "element r[b] of buffer or shared array r[a] := r[c] (device only); XPU-E-BOUNDS";
        AtomicAddI32       "atom.add.i32"       [Dst(T_I32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old + r[a] (wrapping); r[a] := old (a is read, then written; device only); XPU-E-BOUNDS";
        AtomicAddU32       "atom.add.u32"       [Dst(T_U32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old + r[a] (wrapping); r[a] := old (a is read, then written; device only); XPU-E-BOUNDS";
        AtomicAddI64       "atom.add.i64"       [Dst(T_I64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old + r[a] (wrapping); r[a] := old (a is read, then written; device only); XPU-E-BOUNDS";
        AtomicAddU64       "atom.add.u64"       [Dst(T_U64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old + r[a] (wrapping); r[a] := old (a is read, then written; device only); XPU-E-BOUNDS";
        AtomicAddF32       "atom.add.f32"       [Dst(T_F32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old + r[a] (wrapping); r[a] := old (a is read, then written; device only); XPU-E-BOUNDS";
        ParseInt           "str.parseint"       [Dst(T_I64), Src(T_STR), N] "r[a] := r[b] parsed as a decimal int64 (optional sign, ASCII digits); E-FORMAT otherwise, E-NULL on null (Cajeta.parseInt)";
        Format             "str.format"         [Dst(T_STR), Src(T_STR), Special] "r[a] := format string r[b] applied to the arguments in r[c] (String[]: each one's string conversion) and r[c+1] (float64[]: its value for {:.N}, NaN if not numeric); E-NULL";
        WaveSumU32         "wave.sum.u32"       [Dst(T_U32), Src(T_U32), N] "r[a] := wrapping sum of r[b] over the wave's active lanes, the same in every lane (Wave.reduceSum; a wave collective: rendezvous of the wave; XPU-E-DIVERGENT; device only)";
        WaveSumF32         "wave.sum.f32"       [Dst(T_F32), Src(T_F32), N] "r[a] := butterfly sum of r[b] over the wave (XPU §5.3: inactive lanes count +0.0; for d = 1, 2, 4, … W/2 every lane adds lane j xor d), the same in every lane (Wave.reduceSumF32; a wave collective; device only)";
        SysExit            "sys.exit"           [Src(T_I32), N, N] "System.exit(r[a]): flush output and end the program at once with status r[a] & 0xFF (no drops)";
        SysTime            "sys.time"           [Dst(T_I64), Imm16, N] "r[a] := System.currentTimeMillis() (b = 0) or System.nanoTime() (b = 1, monotonic)";
        StrCount           "str.count"          [Dst(T_I64), Src(T_STR), N] "r[a] := number of code points of r[b]; E-NULL";
        StrSize            "str.size"           [Dst(T_I64), Src(T_STR), N] "r[a] := number of UTF-8 bytes of r[b]; E-NULL";
        PopcU32            "popc.u32"           [Dst(T_U32), Src(T_U32), N] "r[a] := the number of set bits of r[b] (Bits.count)";
        BrevU32            "brev.u32"           [Dst(T_U32), Src(T_U32), N] "r[a] := the 32 bits of r[b] in reverse order (Bits.reverse)";
        RotlU32            "rotl.u32"           [Dst(T_U32), Src(T_U32), Src(T_U32)] "r[a] := r[b] rotated left by r[c] mod 32 (Bits.rotateLeft)";
        RotrU32            "rotr.u32"           [Dst(T_U32), Src(T_U32), Src(T_U32)] "r[a] := r[b] rotated right by r[c] mod 32 (Bits.rotateRight)";
        F32Bits            "fbits.i32"          [Dst(T_I32), Src(T_F32), N] "r[a] := the IEEE bits of r[b] as int32 (Cajeta.f32ToBits)";
        F64Bits            "fbits.i64"          [Dst(T_I64), Src(T_F64), N] "r[a] := the IEEE bits of r[b] as int64 (Cajeta.f64ToBits)";
        BitsF32            "bitsf.f32"          [Dst(T_F32), Src(T_I32), N] "r[a] := the float32 whose IEEE bits are r[b] (Cajeta.bitsToF32)";
        BitsF64            "bitsf.f64"          [Dst(T_F64), Src(T_I64), N] "r[a] := the float64 whose IEEE bits are r[b] (Cajeta.bitsToF64)";
        AtomicSubI32       "atom.sub.i32"       [Dst(T_I32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old - r[a] (wrapping); r[a] := old (device only); XPU-E-BOUNDS";
        AtomicSubU32       "atom.sub.u32"       [Dst(T_U32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old - r[a] (wrapping); r[a] := old (device only); XPU-E-BOUNDS";
        AtomicSubI64       "atom.sub.i64"       [Dst(T_I64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old - r[a] (wrapping); r[a] := old (device only); XPU-E-BOUNDS";
        AtomicSubU64       "atom.sub.u64"       [Dst(T_U64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old - r[a] (wrapping); r[a] := old (device only); XPU-E-BOUNDS";
        AtomicMinI32       "atom.min.i32"       [Dst(T_I32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := min(old, r[a]) (by the element's signedness); r[a] := old (device only); XPU-E-BOUNDS";
        AtomicMinU32       "atom.min.u32"       [Dst(T_U32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := min(old, r[a]) (by the element's signedness); r[a] := old (device only); XPU-E-BOUNDS";
        AtomicMinI64       "atom.min.i64"       [Dst(T_I64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := min(old, r[a]) (by the element's signedness); r[a] := old (device only); XPU-E-BOUNDS";
        AtomicMinU64       "atom.min.u64"       [Dst(T_U64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := min(old, r[a]) (by the element's signedness); r[a] := old (device only); XPU-E-BOUNDS";
        AtomicMaxI32       "atom.max.i32"       [Dst(T_I32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := max(old, r[a]) (by the element's signedness); r[a] := old (device only); XPU-E-BOUNDS";
        AtomicMaxU32       "atom.max.u32"       [Dst(T_U32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := max(old, r[a]) (by the element's signedness); r[a] := old (device only); XPU-E-BOUNDS";
        AtomicMaxI64       "atom.max.i64"       [Dst(T_I64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := max(old, r[a]) (by the element's signedness); r[a] := old (device only); XPU-E-BOUNDS";
        AtomicMaxU64       "atom.max.u64"       [Dst(T_U64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := max(old, r[a]) (by the element's signedness); r[a] := old (device only); XPU-E-BOUNDS";
        AtomicAndI32       "atom.and.i32"       [Dst(T_I32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old & r[a]; r[a] := old (device only); XPU-E-BOUNDS";
        AtomicAndU32       "atom.and.u32"       [Dst(T_U32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old & r[a]; r[a] := old (device only); XPU-E-BOUNDS";
        AtomicAndI64       "atom.and.i64"       [Dst(T_I64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old & r[a]; r[a] := old (device only); XPU-E-BOUNDS";
        AtomicAndU64       "atom.and.u64"       [Dst(T_U64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old & r[a]; r[a] := old (device only); XPU-E-BOUNDS";
        AtomicOrI32        "atom.or.i32"        [Dst(T_I32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old | r[a]; r[a] := old (device only); XPU-E-BOUNDS";
        AtomicOrU32        "atom.or.u32"        [Dst(T_U32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old | r[a]; r[a] := old (device only); XPU-E-BOUNDS";
        AtomicOrI64        "atom.or.i64"        [Dst(T_I64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old | r[a]; r[a] := old (device only); XPU-E-BOUNDS";
        AtomicOrU64        "atom.or.u64"        [Dst(T_U64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old | r[a]; r[a] := old (device only); XPU-E-BOUNDS";
        AtomicXorI32       "atom.xor.i32"       [Dst(T_I32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old ^ r[a]; r[a] := old (device only); XPU-E-BOUNDS";
        AtomicXorU32       "atom.xor.u32"       [Dst(T_U32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old ^ r[a]; r[a] := old (device only); XPU-E-BOUNDS";
        AtomicXorI64       "atom.xor.i64"       [Dst(T_I64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old ^ r[a]; r[a] := old (device only); XPU-E-BOUNDS";
        AtomicXorU64       "atom.xor.u64"       [Dst(T_U64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := old ^ r[a]; r[a] := old (device only); XPU-E-BOUNDS";
        AtomicXchgI32      "atom.xchg.i32"      [Dst(T_I32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := r[a]; r[a] := old (device only); XPU-E-BOUNDS";
        AtomicXchgU32      "atom.xchg.u32"      [Dst(T_U32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := r[a]; r[a] := old (device only); XPU-E-BOUNDS";
        AtomicXchgI64      "atom.xchg.i64"      [Dst(T_I64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := r[a]; r[a] := old (device only); XPU-E-BOUNDS";
        AtomicXchgU64      "atom.xchg.u64"      [Dst(T_U64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := r[a]; r[a] := old (device only); XPU-E-BOUNDS";
        AtomicMinF32       "atom.min.f32"       [Dst(T_F32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := minNum(old, r[a]) (a NaN operand yields the other); r[a] := old (device only); XPU-E-BOUNDS";
        AtomicMaxF32       "atom.max.f32"       [Dst(T_F32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; element := maxNum(old, r[a]) (a NaN operand yields the other); r[a] := old (device only); XPU-E-BOUNDS";
        AtomicCasI32       "atom.cas.i32"       [Dst(T_I32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; if old == r[a] then element := r[a+1] (same type, V-DEVMEM); r[a] := old (device only); XPU-E-BOUNDS";
        AtomicCasU32       "atom.cas.u32"       [Dst(T_U32), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; if old == r[a] then element := r[a+1] (same type, V-DEVMEM); r[a] := old (device only); XPU-E-BOUNDS";
        AtomicCasI64       "atom.cas.i64"       [Dst(T_I64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; if old == r[a] then element := r[a+1] (same type, V-DEVMEM); r[a] := old (device only); XPU-E-BOUNDS";
        AtomicCasU64       "atom.cas.u64"       [Dst(T_U64), Src(DEVMEM), Src(T_I64)] "atomically: old := element r[c] of r[b]; if old == r[a] then element := r[a+1] (same type, V-DEVMEM); r[a] := old (device only); XPU-E-BOUNDS";
        WaveMaxU32         "wave.max.u32"       [Dst(T_U32), Src(T_U32), N] "r[a] := unsigned maximum of r[b] over the wave's active lanes, the same in every lane (Wave.reduceMax; a wave collective; device only)";
        WaveMinU32         "wave.min.u32"       [Dst(T_U32), Src(T_U32), N] "r[a] := unsigned minimum of r[b] over the wave's active lanes (Wave.reduceMin; a wave collective; device only)";
        WaveAndU32         "wave.and.u32"       [Dst(T_U32), Src(T_U32), N] "r[a] := bitwise and of r[b] over the wave's active lanes (Wave.reduceAnd; a wave collective; device only)";
        WaveOrU32          "wave.or.u32"        [Dst(T_U32), Src(T_U32), N] "r[a] := bitwise or of r[b] over the wave's active lanes (Wave.reduceOr; a wave collective; device only)";
        WaveXorU32         "wave.xor.u32"       [Dst(T_U32), Src(T_U32), N] "r[a] := bitwise xor of r[b] over the wave's active lanes (Wave.reduceXor; a wave collective; device only)";
        WaveMaxF32         "wave.max.f32"       [Dst(T_F32), Src(T_F32), N] "r[a] := butterfly maxNum of r[b] over the wave (XPU §5.3: inactive lanes count -inf; a NaN operand yields the other), the same in every lane (Wave.reduceMaxF32; a wave collective; device only)";
        WaveScanAddU32     "wave.scanadd.u32"   [Dst(T_U32), Src(T_U32), N] "r[a] := wrapping sum of r[b] over the active lanes of lower lane id, 0 in the first (Wave.prefixSum, exclusive; a wave collective; device only)";
        WaveScanMulU32     "wave.scanmul.u32"   [Dst(T_U32), Src(T_U32), N] "r[a] := wrapping product of r[b] over the active lanes of lower lane id, 1 in the first (Wave.prefixProduct, exclusive; a wave collective; device only)";
        WaveShflU32        "wave.shfl.u32"      [Dst(T_U32), Src(T_U32), Src(T_U32)] "r[a] := r[b] of lane r[c] mod W (Wave.shuffleSync; a wave collective; an inactive source lane is XPU-E-DIVERGENT on cpu; device only)";
        WaveRotU32         "wave.rot.u32"       [Dst(T_U32), Src(T_U32), Src(T_U32)] "r[a] := r[b] of lane (laneId + r[c]) mod W (Wave.rotate; a wave collective; an inactive source lane is XPU-E-DIVERGENT on cpu; device only)";
        WaveBallot         "wave.ballot"        [Dst(T_U64), Src(T_BOOL), N] "r[a] := bit i set iff lane i is active and r[b] holds there (Wave.ballotSync; a wave collective; device only)";
        WaveBarrier        "wave.barrier"       [N, N, N] "Barrier.wave(): rendezvous of the wave's lanes, making their earlier buffer and shared writes visible to each other (device only); XPU-E-DIVERGENT";
        Fence              "fence"              [N, Imm16, N] "memory fence of scope b (0 workgroup, 1 device) ordering the item's own accesses, no rendezvous (Barrier.workgroupMemory/deviceMemory; device only)";
        KernelAttr         "kattr"              [N, Imm16, Imm16] "kernel attribute b has value c: 0 @Wave width, 1 @Occupancy maxThreads (65535: no smaller limit), 2 @FastMath (c = 1); only among a kernel's leading instructions (V-KATTR); does nothing when executed";
        DeviceQuery        "device.query"       [Special, Imm16, N] "r[a] := Device query b (a device touch): 0 waveSize() int32, 1 memoryBytes() int64, 2 multiprocessorCount() int32, 3 integrated() boolean, 4 launchFailures() int64, 5 cpuWorkerCap() int32 (V-DEVQUERY: r[a] has that type)";
        DeviceSupports     "device.supports"    [Dst(T_BOOL), Src(T_I32), N] "r[a] := Device.supports(Capability ordinal r[b]) (a device touch; false for an unknown ordinal)";
        DeviceKernelOk     "device.kernelok"    [Dst(T_BOOL), Src(T_STR), N] "r[a] := Device.kernelAvailable(r[b]): a kernel of the module named r[b] (simple, Class.k or qualified name) that the active backend can run (a device touch); E-NULL";
        DeviceSetWorkers   "device.setworkers"  [Src(T_I32), N, N] "Device.setCpuWorkerCap(r[a]): cap on cpu worker threads, 0 or negative = one per core (no effect on other backends; not a device touch)";
        EventCreate        "event.create"       [Dst(T_EVENT), N, N] "r[a] := a new, never-recorded event (Event.create(); a device touch)";
        EventRecord        "event.record"       [Src(T_EVENT), Src(T_STREAM), N] "r[a].recordOn(r[b]): r[a] is signalled once the work submitted to stream r[b] so far completes (replaces an earlier recording); XPU-E-FREED (destroyed event or stream), E-NULL";
        EventWaitHost      "event.waithost"     [Src(T_EVENT), N, N] "r[a].waitHost(): block until r[a] is signalled (never recorded: at once); reports a pending kernel fault; XPU-E-FREED, E-NULL";
        EventQuery         "event.query"        [Dst(T_BOOL), Src(T_EVENT), N] "r[a] := r[b].query(): true iff r[b] is signalled (never recorded: true); XPU-E-FREED, E-NULL";
        EventDestroy       "event.destroy"      [Src(T_EVENT), N, N] "r[a].destroy(): release the event (idempotent; a dropped event: nothing); E-NULL";
        StreamWaitFor      "stream.waitfor"     [Src(T_STREAM), Src(T_EVENT), N] "r[a].waitFor(r[b]): later work on stream r[a] waits until event r[b] is signalled (never recorded: nothing to wait for); XPU-E-FREED (destroyed stream or event), E-NULL";
        ArrOwnGet          "aown.get"           [Dst(T_BOOL), Src(ARRAY), Src(T_I64)] "r[a] := the owns-flag of element r[c] of r[b], an array of references (false until set; LANGUAGE §6.2); E-NULL, E-BOUNDS";
        ArrOwnSet          "aown.set"           [Src(ARRAY), Src(T_I64), Src(T_BOOL)] "the owns-flag of element r[b] of r[a], an array of references, := r[c] (the store itself is aset.ref); E-NULL, E-BOUNDS";
        ArrOwnTake         "aown.take"          [Dst(REF), Src(ARRAY), N] "r[a] := the element of highest index of r[b] whose owns-flag is set, the flag cleared (the caller takes the title: array drops, LANGUAGE §6.5); null when none is, or r[b] is null or released";
        F16ToF32           "cvt.f32.f16"        [Dst(T_F32), Src(T_F16), N] "r[a] := float16 r[b] widened (exact; T2)";
        F32ToF16           "cvt.f16.f32"        [Dst(T_F16), Src(T_F32), N] "r[a] := r[b] rounded to float16, nearest-even, overflow to inf (T2)";
        BF16ToF32          "cvt.f32.bf16"       [Dst(T_F32), Src(T_BF16), N] "r[a] := bfloat16 r[b] widened (exact; T2)";
        F32ToBF16          "cvt.bf16.f32"       [Dst(T_BF16), Src(T_F32), N] "r[a] := r[b] rounded to bfloat16, nearest-even, overflow to inf (T2)";
        F64ToF16           "cvt.f16.f64"        [Dst(T_F16), Src(T_F64), N] "r[a] := r[b] rounded once to float16, nearest-even, overflow to inf (T2)";
        F64ToBF16          "cvt.bf16.f64"       [Dst(T_BF16), Src(T_F64), N] "r[a] := r[b] rounded once to bfloat16, nearest-even, overflow to inf (T2)";
        ArrGetF16          "aget.f16"           [Dst(T_F16), Src(ARRAY), Src(T_I64)] "r[a] := r[b][r[c]] (float16 bits; T2); E-NULL, E-BOUNDS";
        ArrSetF16          "aset.f16"           [Src(ARRAY), Src(T_I64), Src(T_F16)] "r[a][r[b]] := r[c] (float16 bits; T2); E-NULL, E-BOUNDS";
        ArrGetBF16         "aget.bf16"          [Dst(T_BF16), Src(ARRAY), Src(T_I64)] "r[a] := r[b][r[c]] (bfloat16 bits; T2); E-NULL, E-BOUNDS";
        ArrSetBF16         "aset.bf16"          [Src(ARRAY), Src(T_I64), Src(T_BF16)] "r[a][r[b]] := r[c] (bfloat16 bits; T2); E-NULL, E-BOUNDS";
        DevGetF16          "ld.f16"             [Dst(T_F16), Src(DEVMEM), Src(T_I64)] "r[a] := element r[c] of buffer or shared array r[b], float16 bits (device only; T2); XPU-E-BOUNDS";
        DevSetF16          "st.f16"             [Src(DEVMEM), Src(T_I64), Src(T_F16)] "element r[b] of buffer or shared array r[a] := r[c], float16 bits (device only; T2); XPU-E-BOUNDS";
        DevGetBF16         "ld.bf16"            [Dst(T_BF16), Src(DEVMEM), Src(T_I64)] "r[a] := element r[c] of buffer or shared array r[b], bfloat16 bits (device only; T2); XPU-E-BOUNDS";
        DevSetBF16         "st.bf16"            [Src(DEVMEM), Src(T_I64), Src(T_BF16)] "element r[b] of buffer or shared array r[a] := r[c], bfloat16 bits (device only; T2); XPU-E-BOUNDS";
        CheckIndex         "chk.idx"            [Src(T_I64), Src(T_I64), Src(ANY)] "nothing if 0 <= r[a] < r[b], else XPU-E-BOUNDS naming r[c] (device only; T2): r[c] is a shared array (r[b] its length, e.g. a dynamic one's) or lane 0 of a vector (r[b] its lane count; a run-time lane index)";
        TimerMark          "device.timermark"   [Dst(T_I64), Src(T_STREAM), Imm16] "r[a] := the host's monotonic clock in ns, read once stream r[b] has run the work submitted to it so far: a host-timed KernelTimer mark (XPU §2.13, T2; c names the method for messages: 0 begin, 1 end); XPU-E-FREED (destroyed stream), E-NULL";
        TimerLive          "device.timerlive"   [Src(T_I32), Imm16, N] "nothing if the KernelTimer state word r[a] lacks bit 2 (destroyed), else XPU-E-FREED naming method b (0 begin, 1 end, 2 elapsedNanos; T2)";
        KernelWave         "device.kernelwave"  [Dst(T_I32), Src(T_STR), N] "r[a] := the wave width at which the active backend runs the kernel of the module named r[b] (simple, Class.k or qualified name; its @Wave width, else the backend's), 0 if there is none or the backend cannot run it (KernelManifest.of, XPU §2.13, T2; a device touch); E-NULL";
        KernelName         "device.kernelname"  [Dst(T_STR), Src(T_STR), N] "r[a] := the qualified name of the module's kernel named r[b] (simple, Class.k or qualified name; the first match), null if there is none (KernelManifest.kernel, XPU §2.13, T2; a device touch); E-NULL";
        }
    };
}

macro_rules! define_ops {
    ($($name:ident $mn:literal [$a:expr, $b:expr, $c:expr] $sem:literal;)*) => {
        /// An opcode. See the table in [`for_each_opcode!`] (and `cajeta dis`) for each one's
        /// operands and semantics.
        #[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
        #[repr(u16)]
        pub enum Op {
            $(#[doc = $sem] $name,)*
        }

        impl Op {
            /// Every opcode in encoding order.
            pub const ALL: &'static [Op] = &[$(Op::$name,)*];

            /// The assembler mnemonic (`add.i32`).
            pub fn mnemonic(self) -> &'static str {
                match self { $(Op::$name => $mn,)* }
            }

            /// The operand shapes of slots a, b and c.
            pub fn operands(self) -> [Operand; 3] {
                match self { $(Op::$name => [$a, $b, $c],)* }
            }

            /// One-line semantics, as in the table.
            pub fn semantics(self) -> &'static str {
                match self { $(Op::$name => $sem,)* }
            }
        }
    };
}

for_each_opcode!(define_ops);

impl Op {
    /// Number of opcodes.
    pub const COUNT: usize = Op::ALL.len();

    /// Decodes an opcode number.
    pub fn from_u16(v: u16) -> Option<Op> {
        Op::ALL.get(v as usize).copied()
    }

    /// True if control never falls through to the next instruction.
    pub fn is_terminator(self) -> bool {
        matches!(self, Op::Jmp | Op::Ret | Op::RetOwn | Op::RetVoid)
    }

    /// True for operations that exist only in device code (kernels and `@Device` functions).
    pub fn is_device_only(self) -> bool {
        let m = self.mnemonic();
        matches!(
            self,
            Op::Geom | Op::Barrier | Op::SharedRef | Op::Fence | Op::KernelAttr | Op::CheckIndex
        ) || m.starts_with("wave.")
            || m.starts_with("ld.")
            || m.starts_with("st.")
            || m.starts_with("atom.")
    }

    /// True for operations that exist only in host code.
    pub fn is_host_only(self) -> bool {
        let m = self.mnemonic();
        (m.starts_with("buf.") && self != Op::BufLength)
            || m.starts_with("stream.")
            || m.starts_with("event.")
            || m.starts_with("device.")
            || m.starts_with("aown.")
            || m.starts_with("tostr.")
            || matches!(
                self,
                Op::Launch
                    | Op::Print
                    | Op::Concat
                    | Op::FmtFixed
                    | Op::EqStr
                    | Op::NewArr
                    | Op::ArrLen
                    | Op::NewObj
                    | Op::ChkObj
                    | Op::GetStatic
                    | Op::SetStatic
                    | Op::Drop
                    | Op::RetOwn
                    | Op::TakeOwn
                    | Op::ArrGetRef
                    | Op::ArrSetRef
                    | Op::ParseInt
                    | Op::Format
                    | Op::SysExit
                    | Op::SysTime
                    | Op::StrCount
                    | Op::StrSize
            )
            || m.starts_with("aget.")
            || m.starts_with("aset.")
    }

    /// True if the instruction may jump to a `Target`.
    pub fn is_branch(self) -> bool {
        matches!(self, Op::Jmp | Op::JmpIf | Op::JmpIfNot)
    }
}

/// One 8-byte instruction.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
#[repr(C, align(8))]
pub struct Instr {
    /// The opcode.
    pub op: Op,
    /// Operand a.
    pub a: u16,
    /// Operand b (low half of `bc`).
    pub b: u16,
    /// Operand c (high half of `bc`).
    pub c: u16,
}

impl Instr {
    /// An instruction with three 16-bit operands.
    pub const fn new(op: Op, a: u16, b: u16, c: u16) -> Instr {
        Instr { op, a, b, c }
    }

    /// An instruction with one operand and a 32-bit immediate.
    pub const fn with_bc(op: Op, a: u16, bc: u32) -> Instr {
        Instr {
            op,
            a,
            b: bc as u16,
            c: (bc >> 16) as u16,
        }
    }

    /// The 32-bit immediate formed by `b` (low) and `c` (high).
    pub const fn bc(self) -> u32 {
        self.b as u32 | ((self.c as u32) << 16)
    }

    /// Replaces the 32-bit immediate (used to patch jump targets).
    pub fn set_bc(&mut self, bc: u32) {
        self.b = bc as u16;
        self.c = (bc >> 16) as u16;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instr_is_eight_bytes() {
        assert_eq!(std::mem::size_of::<Instr>(), 8);
    }

    #[test]
    fn opcodes_round_trip_and_mnemonics_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for (i, op) in Op::ALL.iter().enumerate() {
            assert_eq!(Op::from_u16(i as u16), Some(*op));
            assert!(
                seen.insert(op.mnemonic()),
                "duplicate mnemonic {}",
                op.mnemonic()
            );
        }
        assert_eq!(Op::from_u16(Op::COUNT as u16), None);
    }

    #[test]
    fn wide_immediates_only_in_slot_b() {
        for op in Op::ALL {
            let [a, b, c] = op.operands();
            for (slot, o) in [(0, a), (2, c)] {
                assert!(
                    !matches!(o, Imm32 | Const | Target | Class),
                    "{} has a 32-bit operand in slot {slot}",
                    op.mnemonic()
                );
            }
            if matches!(b, Imm32 | Const | Target | Class) {
                assert_eq!(c, N, "{}: slot c must be free", op.mnemonic());
            }
        }
    }
}
