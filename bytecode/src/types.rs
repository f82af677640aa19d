//! Register and value types of the bytecode.
//!
//! Every register of a function has one fixed [`Type`]; the verifier proves each instruction's
//! operands have the types its opcode expects, so the interpreter never inspects a tag.
//!
//! **Cell representation** (the contract between compiler, interpreter, JIT and backends): a
//! register is an untyped 8-byte cell. Integers are kept *canonical*: the value sign-extended
//! (signed types) or zero-extended (unsigned types) to 64 bits, so that one 64-bit comparison or
//! bitwise op serves every width. `boolean` is 0 or 1. `char` is the code point, zero-extended.
//! `float32` is its IEEE bits in the low 32 bits (high bits zero); `float64` its 64 IEEE bits;
//! `float16` and `bfloat16` their 16 bits in the low 16 bits (high bits zero, T2; arithmetic on
//! them is done in float32, see [`crate::half`]).
//! References (strings, arrays, objects, buffers, streams) are VM handles; 0 is `null`.

/// A primitive (scalar) type: what fits in one register cell by value.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[repr(u8)]
pub enum Scalar {
    /// `boolean`: 0 or 1.
    Bool = 0,
    /// `char`: a code point, zero-extended.
    Char = 1,
    /// `int8`.
    I8 = 2,
    /// `uint8`.
    U8 = 3,
    /// `int16`.
    I16 = 4,
    /// `uint16`.
    U16 = 5,
    /// `int32`.
    I32 = 6,
    /// `uint32`.
    U32 = 7,
    /// `int64`.
    I64 = 8,
    /// `uint64`.
    U64 = 9,
    /// `float32`.
    F32 = 10,
    /// `float64`.
    F64 = 11,
    /// `float16` (IEEE binary16, T2).
    F16 = 12,
    /// `bfloat16` (the upper 16 bits of a binary32, T2).
    BF16 = 13,
}

impl Scalar {
    /// All scalars, in encoding order.
    pub const ALL: [Scalar; 14] = [
        Scalar::Bool,
        Scalar::Char,
        Scalar::I8,
        Scalar::U8,
        Scalar::I16,
        Scalar::U16,
        Scalar::I32,
        Scalar::U32,
        Scalar::I64,
        Scalar::U64,
        Scalar::F32,
        Scalar::F64,
        Scalar::F16,
        Scalar::BF16,
    ];

    /// Decodes the encoding byte.
    pub fn from_u8(b: u8) -> Option<Scalar> {
        Scalar::ALL.get(b as usize).copied()
    }

    /// The Cajeta spelling (`int32`, `float64`, …).
    pub fn name(self) -> &'static str {
        match self {
            Scalar::Bool => "boolean",
            Scalar::Char => "char",
            Scalar::I8 => "int8",
            Scalar::U8 => "uint8",
            Scalar::I16 => "int16",
            Scalar::U16 => "uint16",
            Scalar::I32 => "int32",
            Scalar::U32 => "uint32",
            Scalar::I64 => "int64",
            Scalar::U64 => "uint64",
            Scalar::F32 => "float32",
            Scalar::F64 => "float64",
            Scalar::F16 => "float16",
            Scalar::BF16 => "bfloat16",
        }
    }

    /// Short suffix used in mnemonics (`i32`, `f64`, `bool`, `char`).
    pub fn suffix(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::Char => "char",
            Scalar::I8 => "i8",
            Scalar::U8 => "u8",
            Scalar::I16 => "i16",
            Scalar::U16 => "u16",
            Scalar::I32 => "i32",
            Scalar::U32 => "u32",
            Scalar::I64 => "i64",
            Scalar::U64 => "u64",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
            Scalar::F16 => "f16",
            Scalar::BF16 => "bf16",
        }
    }

    /// True for the eight integer types.
    pub fn is_int(self) -> bool {
        matches!(
            self,
            Scalar::I8
                | Scalar::U8
                | Scalar::I16
                | Scalar::U16
                | Scalar::I32
                | Scalar::U32
                | Scalar::I64
                | Scalar::U64
        )
    }

    /// True for the four float types (`float16`, `bfloat16`, `float32`, `float64`).
    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64 | Scalar::F16 | Scalar::BF16)
    }

    /// True for `float16` and `bfloat16`: storage formats whose arithmetic is done in float32.
    pub fn is_half(self) -> bool {
        matches!(self, Scalar::F16 | Scalar::BF16)
    }

    /// True for integer and float types.
    pub fn is_numeric(self) -> bool {
        self.is_int() || self.is_float()
    }

    /// True for the signed integer types.
    pub fn is_signed(self) -> bool {
        matches!(self, Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64)
    }

    /// Width in bits (`boolean` counts 8, `char` 32).
    pub fn bits(self) -> u32 {
        match self {
            Scalar::Bool | Scalar::I8 | Scalar::U8 => 8,
            Scalar::I16 | Scalar::U16 | Scalar::F16 | Scalar::BF16 => 16,
            Scalar::Char | Scalar::I32 | Scalar::U32 | Scalar::F32 => 32,
            Scalar::I64 | Scalar::U64 | Scalar::F64 => 64,
        }
    }

    /// Size in bytes of one element in an array or buffer.
    pub fn size(self) -> usize {
        (self.bits() / 8) as usize
    }
}

/// What a reference-typed array holds, or a scalar.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Elem {
    /// A primitive element.
    Scalar(Scalar),
    /// A `String` element (handle).
    Str,
    /// An instance of class `n` of the module (handle).
    Object(u32),
}

/// The type of a register, field, static or parameter.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Type {
    /// A primitive value.
    Scalar(Scalar),
    /// A `String` handle.
    Str,
    /// A host array handle (`T[]`).
    Array(Elem),
    /// An instance of class `n` of the module.
    Object(u32),
    /// A `KernelBuffer<T>` handle.
    Buffer(Scalar),
    /// A `KernelStream` handle.
    Stream,
    /// An `Event` handle (XPU §2.3, T2).
    Event,
    /// A `Shared<T>` array of the current workgroup (device code only): a handle naming one of
    /// the kernel's shared declarations.
    Shared(Scalar),
}

impl Type {
    /// Shorthand constructors.
    pub const BOOL: Type = Type::Scalar(Scalar::Bool);
    /// `int32`.
    pub const I32: Type = Type::Scalar(Scalar::I32);
    /// `int64`.
    pub const I64: Type = Type::Scalar(Scalar::I64);
    /// `float64`.
    pub const F64: Type = Type::Scalar(Scalar::F64);

    /// The scalar, if this is one.
    pub fn scalar(self) -> Option<Scalar> {
        match self {
            Type::Scalar(s) => Some(s),
            _ => None,
        }
    }

    /// True for handle-typed registers (0 is null).
    pub fn is_ref(self) -> bool {
        !matches!(self, Type::Scalar(_))
    }
}

impl std::fmt::Display for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for Elem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Elem::Scalar(s) => write!(f, "{s}"),
            Elem::Str => f.write_str("String"),
            Elem::Object(c) => write!(f, "class#{c}"),
        }
    }
}

impl std::fmt::Display for Type {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Type::Scalar(s) => write!(f, "{s}"),
            Type::Str => f.write_str("String"),
            Type::Array(e) => write!(f, "{e}[]"),
            Type::Object(c) => write!(f, "class#{c}"),
            Type::Buffer(s) => write!(f, "KernelBuffer<{s}>"),
            Type::Stream => f.write_str("KernelStream"),
            Type::Event => f.write_str("Event"),
            Type::Shared(s) => write!(f, "Shared<{s}>"),
        }
    }
}
