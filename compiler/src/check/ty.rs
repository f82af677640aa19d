//! Semantic types of the checker and the numeric rules of LANGUAGE §3–§4: literal typing,
//! untyped constants, binary numeric promotion, and what converts to what.

use cajeta_bytecode::{half, Elem, Scalar, Type};

/// A library enum (LANGUAGE §2: only the library's enums exist).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum EnumTy {
    /// `MemoryKind { Device, Pinned, Unified }`.
    MemoryKind,
    /// `MemoryOrder { Relaxed, Acquire, Release, AcqRel, SeqCst }`.
    MemoryOrder,
    /// `Capability { RayQueryNative, RayQueryRtCore, CoopMatrixBf16F32Acc, AtomicInt64 }` (T2).
    Capability,
}

impl EnumTy {
    /// The constants in ordinal order.
    pub fn constants(self) -> &'static [&'static str] {
        match self {
            EnumTy::MemoryKind => &["Device", "Pinned", "Unified"],
            EnumTy::MemoryOrder => &["Relaxed", "Acquire", "Release", "AcqRel", "SeqCst"],
            EnumTy::Capability => &[
                "RayQueryNative",
                "RayQueryRtCore",
                "CoopMatrixBf16F32Acc",
                "AtomicInt64",
            ],
        }
    }

    /// The type name.
    pub fn name(self) -> &'static str {
        match self {
            EnumTy::MemoryKind => "MemoryKind",
            EnumTy::MemoryOrder => "MemoryOrder",
            EnumTy::Capability => "Capability",
        }
    }
}

/// The type of an expression or declaration.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Ty {
    /// A primitive.
    Prim(Scalar),
    /// `String`.
    Str,
    /// `T[]`.
    Array(Box<Ty>),
    /// A class of the program (index into the checker's class table).
    Class(u32),
    /// `KernelBuffer<T>`.
    Buffer(Scalar),
    /// `KernelStream`.
    Stream,
    /// `Event` (XPU §2.3, T2).
    Event,
    /// `Shared<T>` (kernel code only).
    Shared(Scalar),
    /// A library enum constant's type.
    Enum(EnumTy),
    /// `Vector<T,N>` (XPU §2.11): `N` consecutive registers of `T` (a mask when `T` is
    /// boolean).
    Vector(Scalar, u8),
    /// The type of `null`.
    Null,
    /// The result of a `void` call.
    Void,
    /// An expression that already produced a diagnostic: accepted everywhere, reported nowhere.
    Error,
}

impl Ty {
    /// The scalar an array of this element type stores: primitives their own, an enum its
    /// int32 ordinal; `None` for reference elements.
    pub fn elem_scalar(&self) -> Option<Scalar> {
        match self {
            Ty::Prim(s) => Some(*s),
            Ty::Enum(_) => Some(Scalar::I32),
            _ => None,
        }
    }

    /// `boolean`.
    pub const BOOL: Ty = Ty::Prim(Scalar::Bool);

    /// The scalar, if primitive.
    pub fn scalar(&self) -> Option<Scalar> {
        match self {
            Ty::Prim(s) => Some(*s),
            _ => None,
        }
    }

    /// True for integer and float types.
    pub fn is_numeric(&self) -> bool {
        self.scalar().is_some_and(Scalar::is_numeric)
    }

    /// True for integer types.
    pub fn is_int(&self) -> bool {
        self.scalar().is_some_and(Scalar::is_int)
    }

    /// True for reference types (and null).
    pub fn is_ref(&self) -> bool {
        matches!(
            self,
            Ty::Str
                | Ty::Array(_)
                | Ty::Class(_)
                | Ty::Buffer(_)
                | Ty::Stream
                | Ty::Event
                | Ty::Shared(_)
                | Ty::Null
        )
    }

    /// True for owned-object types (those with titles and drops, LANGUAGE §6): everything
    /// reference-typed except Strings.
    pub fn is_owned_kind(&self) -> bool {
        matches!(
            self,
            Ty::Array(_) | Ty::Class(_) | Ty::Buffer(_) | Ty::Stream | Ty::Event
        )
    }

    /// Registers a value of this type occupies: `N` for a vector, else 1.
    pub fn lanes(&self) -> usize {
        match self {
            Ty::Vector(_, n) => *n as usize,
            _ => 1,
        }
    }

    /// The register type that holds a value of this type. Enums are their ordinal (`int32`).
    pub fn reg(&self) -> Type {
        match self {
            Ty::Prim(s) => Type::Scalar(*s),
            Ty::Str => Type::Str,
            Ty::Array(e) => Type::Array(match &**e {
                Ty::Prim(_) | Ty::Enum(_) => Elem::Scalar(e.elem_scalar().expect("scalar")),
                Ty::Class(c) => Elem::Object(*c),
                // Strings and anything else (nested arrays are T2) are reference elements.
                _ => Elem::Str,
            }),
            Ty::Class(c) => Type::Object(*c),
            Ty::Buffer(s) => Type::Buffer(*s),
            Ty::Stream => Type::Stream,
            Ty::Event => Type::Event,
            Ty::Shared(s) => Type::Shared(*s),
            Ty::Enum(_) => Type::Scalar(Scalar::I32),
            // Each lane register; a vector occupies `lanes()` of them.
            Ty::Vector(s, _) => Type::Scalar(*s),
            Ty::Null | Ty::Void | Ty::Error => Type::Scalar(Scalar::I32),
        }
    }
}

/// Binary numeric promotion (LANGUAGE §3.4) of two numeric scalars.
pub fn promote(a: Scalar, b: Scalar) -> Scalar {
    if a.is_float() || b.is_float() {
        if a == Scalar::F64 || b == Scalar::F64 {
            Scalar::F64
        } else {
            Scalar::F32
        }
    } else if a.bits() != b.bits() {
        if a.bits() > b.bits() {
            a
        } else {
            b
        }
    } else if a.is_signed() && !b.is_signed() {
        b
    } else {
        a
    }
}

/// The type of an unsuffixed integer literal (LANGUAGE §1): the first of int32, int64, uint64
/// holding it. `negative` is a directly applied unary minus. Hex/octal/binary literals denote
/// their unsigned magnitude.
pub fn int_literal_type(magnitude: u64, negative: bool) -> Scalar {
    if negative {
        if magnitude <= 1 << 31 {
            Scalar::I32
        } else {
            // Up to 2^63 fits int64; beyond, the parser-accepted magnitude is a syntax error
            // reported by the caller.
            Scalar::I64
        }
    } else if magnitude <= i32::MAX as u64 {
        Scalar::I32
    } else if magnitude <= i64::MAX as u64 {
        Scalar::I64
    } else {
        Scalar::U64
    }
}

/// A compile-time numeric value.
#[derive(Copy, Clone, PartialEq, Debug)]
pub enum Num {
    /// An integer (as i128 so every int64/uint64 value fits).
    Int(i128),
    /// A float (float32 values are stored exactly widened).
    Float(f64),
    /// A decimal float literal whose float64 value is exactly a float16 or bfloat16 rounding
    /// boundary while the decimal itself is not: the value and the sign of (decimal − value),
    /// so converting to float16/bfloat16 still rounds once from the exact decimal (LANGUAGE
    /// §2). Everywhere else it is the plain float ([`Num::plain`]).
    Dec(f64, i8),
}

impl Num {
    /// The value, a [`Num::Dec`] read as its float64.
    pub fn plain(self) -> Num {
        match self {
            Num::Dec(f, _) => Num::Float(f),
            n => n,
        }
    }
}

/// The constant of a decimal float literal with float64 value `value` and source `text`
/// (digits, optional point and exponent, no `_` or suffix): a [`Num::Dec`] when the float64
/// rounding would make a float16/bfloat16 conversion round twice, else a [`Num::Float`].
pub fn float_literal(value: f64, text: &str) -> Num {
    let boundary = |narrow: fn(f64) -> u16| narrow(value.next_up()) != narrow(value.next_down());
    if !value.is_finite()
        || value == 0.0
        || !(boundary(half::f64_to_f16) || boundary(half::f64_to_bf16))
    {
        return Num::Float(value);
    }
    match decimal_cmp(text, value.abs()) {
        Some(std::cmp::Ordering::Greater) => Num::Dec(value, if value < 0.0 { -1 } else { 1 }),
        Some(std::cmp::Ordering::Less) => Num::Dec(value, if value < 0.0 { 1 } else { -1 }),
        _ => Num::Float(value),
    }
}

/// Compares the unsigned decimal `text` (`ddd.ddde±dd`) with the positive finite `v` exactly;
/// `None` for text of another shape (hexadecimal) or of unreasonable size.
fn decimal_cmp(text: &str, v: f64) -> Option<std::cmp::Ordering> {
    let text = text.trim_start_matches('+');
    let (mant, exp) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], text[i + 1..].parse::<i64>().ok()?),
        None => (text, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if text.len() > 4096 || !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    // text = D * 10^e10 with D the digit string.
    let digits = format!("{int}{frac}");
    let e10 = exp.checked_sub(frac.len() as i64)?;
    // v = m * 2^q.
    let bits = v.to_bits();
    let (e, f) = ((bits >> 52) as i64, bits & ((1 << 52) - 1));
    let (m, q) = if e == 0 {
        (f, -1074)
    } else {
        (f | 1 << 52, e - 1075)
    };
    if !(-4000..=4000).contains(&e10) {
        return None;
    }
    // Scale both sides to integers: D * 10^max(e10,0) * 2^max(-q,0) vs m * 2^max(q,0) *
    // 10^max(-e10,0).
    let mut lhs = Big::from_digits(&digits);
    let mut rhs = Big::from_u64(m);
    lhs.mul_pow(10, e10.max(0));
    lhs.mul_pow(2, (-q).max(0));
    rhs.mul_pow(2, q.max(0));
    rhs.mul_pow(10, (-e10).max(0));
    Some(lhs.cmp(&rhs))
}

/// A non-negative integer in base 10^9 limbs, little-endian, no high zero limbs (enough
/// arithmetic for [`decimal_cmp`]).
#[derive(PartialEq, Eq)]
struct Big(Vec<u32>);

impl Big {
    const BASE: u64 = 1_000_000_000;

    fn from_u64(mut x: u64) -> Big {
        let mut v = Vec::new();
        while x > 0 {
            v.push((x % Self::BASE) as u32);
            x /= Self::BASE;
        }
        Big(v)
    }

    fn from_digits(d: &str) -> Big {
        let d = d.trim_start_matches('0');
        let mut v = Vec::new();
        let mut end = d.len();
        while end > 0 {
            let start = end.saturating_sub(9);
            v.push(d[start..end].parse().unwrap_or(0));
            end = start;
        }
        Big(v)
    }

    fn mul_small(&mut self, k: u32) {
        let mut carry = 0u64;
        for limb in &mut self.0 {
            let x = u64::from(*limb) * u64::from(k) + carry;
            *limb = (x % Self::BASE) as u32;
            carry = x / Self::BASE;
        }
        while carry > 0 {
            self.0.push((carry % Self::BASE) as u32);
            carry /= Self::BASE;
        }
    }

    /// Multiplies by `base^n` (`base` 2 or 10).
    fn mul_pow(&mut self, base: u32, mut n: i64) {
        let (chunk, per) = if base == 2 {
            (1 << 29, 29)
        } else {
            (1_000_000_000, 9)
        };
        while n >= per {
            self.mul_small(chunk);
            n -= per;
        }
        if n > 0 {
            self.mul_small(base.pow(n as u32));
        }
    }
}

impl PartialOrd for Big {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Big {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }
}

/// True if integer `v` is exactly representable in `t` (floats: always, rounded).
pub fn int_fits(v: i128, t: Scalar) -> bool {
    match t {
        Scalar::I8 => i8::try_from(v).is_ok(),
        Scalar::U8 => u8::try_from(v).is_ok(),
        Scalar::I16 => i16::try_from(v).is_ok(),
        Scalar::U16 => u16::try_from(v).is_ok(),
        Scalar::I32 => i32::try_from(v).is_ok(),
        Scalar::U32 => u32::try_from(v).is_ok(),
        Scalar::I64 => i64::try_from(v).is_ok(),
        Scalar::U64 => u64::try_from(v).is_ok(),
        Scalar::F32 | Scalar::F64 | Scalar::F16 | Scalar::BF16 => true,
        Scalar::Bool | Scalar::Char => false,
    }
}

/// The canonical 64-bit cell of integer `v` converted to `t` by the cast rules (low bits, then
/// extension by the target's signedness).
pub fn int_cell(v: i128, t: Scalar) -> u64 {
    let bits = v as u64;
    canon(bits, t)
}

/// Re-canonicalises 64 bits to integer type `t` (wrap.* semantics).
pub fn canon(bits: u64, t: Scalar) -> u64 {
    match t {
        Scalar::I8 => bits as i8 as i64 as u64,
        Scalar::U8 | Scalar::Bool => bits as u8 as u64,
        Scalar::I16 => bits as i16 as i64 as u64,
        Scalar::U16 => bits as u16 as u64,
        Scalar::I32 => bits as i32 as i64 as u64,
        Scalar::U32 | Scalar::Char => bits as u32 as u64,
        _ => bits,
    }
}

/// The cell of a numeric constant converted to scalar `t` as by a cast (LANGUAGE §3.1).
pub fn const_cell(n: Num, t: Scalar) -> u64 {
    match (n, t) {
        (Num::Int(v), Scalar::F32) => (v as f32).to_bits() as u64,
        (Num::Int(v), Scalar::F64) => (v as f64).to_bits(),
        (Num::Int(v), Scalar::F16) => u64::from(half::f64_to_f16(v as f64)),
        (Num::Int(v), Scalar::BF16) => u64::from(half::int_to_bf16(v)),
        (Num::Int(v), _) => int_cell(v, t),
        (Num::Float(f), Scalar::F32) => (f as f32).to_bits() as u64,
        (Num::Float(f), Scalar::F64) => f.to_bits(),
        // Off the boundary by one float64 step towards the decimal: one rounding from it.
        (Num::Dec(f, dir), Scalar::F16 | Scalar::BF16) => {
            let g = if dir > 0 { f.next_up() } else { f.next_down() };
            const_cell(Num::Float(g), t)
        }
        (Num::Dec(f, _), _) => const_cell(Num::Float(f), t),
        (Num::Float(f), Scalar::F16) => u64::from(half::f64_to_f16(f)),
        (Num::Float(f), Scalar::BF16) => u64::from(half::f64_to_bf16(f)),
        (Num::Float(f), _) => {
            let v: i128 = match t {
                Scalar::I8 => f as i8 as i128,
                Scalar::U8 => f as u8 as i128,
                Scalar::I16 => f as i16 as i128,
                Scalar::U16 => f as u16 as i128,
                Scalar::I32 => f as i32 as i128,
                Scalar::U32 => f as u32 as i128,
                Scalar::I64 => f as i64 as i128,
                Scalar::U64 => f as u64 as i128,
                _ => 0,
            };
            int_cell(v, t)
        }
    }
}

/// Reads a canonical cell of scalar `t` back as a [`Num`].
pub fn cell_num(bits: u64, t: Scalar) -> Num {
    match t {
        Scalar::F32 => Num::Float(f32::from_bits(bits as u32) as f64),
        Scalar::F64 => Num::Float(f64::from_bits(bits)),
        Scalar::F16 => Num::Float(f64::from(half::f16_to_f32(bits as u16))),
        Scalar::BF16 => Num::Float(f64::from(half::bf16_to_f32(bits as u16))),
        s if s.is_signed() => Num::Int(bits as i64 as i128),
        _ => Num::Int(bits as i128),
    }
}

/// Would converting constant `n` to `t` change its value (for `CAJETA_WARN_LOSSY_CONVERSION`)?
pub fn const_conversion_is_lossy(n: Num, t: Scalar) -> bool {
    match n {
        Num::Int(v) if t.is_int() => !int_fits(v, t),
        Num::Int(_) => false,
        Num::Dec(..) if !t.is_half() => const_conversion_is_lossy(n.plain(), t),
        Num::Dec(..) => true,
        Num::Float(f) => match t {
            Scalar::F64 => false,
            Scalar::F32 => (f as f32) as f64 != f && !f.is_nan(),
            Scalar::F16 | Scalar::BF16 => {
                cell_num(const_cell(n, t), t) != Num::Float(f) && !f.is_nan()
            }
            // To an integer: silent only for a whole number in range (`int32 t = 2.0;`).
            _ => !(f.fract() == 0.0 && f.abs() < 1e38 && int_fits(f as i128, t)),
        },
    }
}

/// Can a value of type `from` be lossy when implicitly converted to `to` (non-constant)?
pub fn conversion_is_lossy(from: Scalar, to: Scalar) -> bool {
    if from == to {
        return false;
    }
    if from.is_int() && to.is_float() {
        return false;
    }
    if from.is_half() {
        // Widening to float32/float64 is exact; float16 <-> bfloat16 is not.
        return !matches!(to, Scalar::F32 | Scalar::F64);
    }
    if from.is_float() {
        return !(from == Scalar::F32 && to == Scalar::F64);
    }
    // Integer to integer: lossless only if every source value fits.
    if from.is_signed() == to.is_signed() {
        to.bits() < from.bits()
    } else if from.is_signed() {
        true
    } else {
        to.bits() <= from.bits()
    }
}

/// The ranking of an argument against a parameter for overload resolution (LANGUAGE §8.4):
/// lower is better, equal ranks tie. `None` if the argument does not convert at all.
///
/// Exact beats lossless beats other. Only lossless conversions of an integer argument are
/// ranked further: to an integer before to a float, to a narrower integer before a wider
/// one. Nothing ranks `float32` against `float64`, or one lossy conversion against another:
/// those candidates tie, and a call they both fit is ambiguous.
pub fn arg_rank(arg: &Ty, param: &Ty) -> Option<u32> {
    if arg == param {
        return Some(0);
    }
    if *arg == Ty::Error || *param == Ty::Error {
        return Some(0);
    }
    match (arg, param) {
        (Ty::Prim(a), Ty::Prim(p)) if a.is_numeric() && p.is_numeric() => {
            Some(if conversion_is_lossy(*a, *p) {
                1000
            } else if !a.is_int() {
                1
            } else if p.is_int() {
                1 + p.bits()
            } else {
                100
            })
        }
        (Ty::Null, p) if p.is_ref() => Some(1),
        (Ty::Enum(_), Ty::Prim(Scalar::I32)) => Some(500),
        // A half vector and a float32 vector of one length convert as in assignment: widening
        // exact, narrowing lossy (docs/spec-decisions.md, "Vector").
        (Ty::Vector(a, m), Ty::Vector(p, k)) if m == k && super::vector::half_pair(*a, *p) => {
            Some(if conversion_is_lossy(*a, *p) { 1000 } else { 1 })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    #[test]
    fn decimal_comparison_is_exact() {
        let mid = 1.0 + 2f64.powi(-11);
        assert_eq!(decimal_cmp("1.00048828125", mid), Some(Ordering::Equal));
        assert_eq!(
            decimal_cmp("1.000488281250000000001", mid),
            Some(Ordering::Greater)
        );
        assert_eq!(
            decimal_cmp("1000488281249999999999e-21", mid),
            Some(Ordering::Less)
        );
        assert_eq!(decimal_cmp("0.1", 0.1), Some(Ordering::Less));
        assert_eq!(decimal_cmp("0x1p3", 8.0), None);
    }

    #[test]
    fn literals_at_a_boundary_round_once() {
        let lit = |t: &str| float_literal(t.parse().unwrap_or(f64::NAN), t);
        assert_eq!(lit("1.00048828125"), Num::Float(1.00048828125));
        assert_eq!(
            const_cell(lit("1.000488281250000000001"), Scalar::F16),
            0x3c01
        );
        assert_eq!(
            const_cell(lit("1.000488281249999999999"), Scalar::F16),
            0x3c00
        );
        // float64 itself is unaffected.
        let f = lit("1.000488281250000000001");
        assert_eq!(const_cell(f, Scalar::F64), 1.00048828125f64.to_bits());
        assert_eq!(lit("0.1"), Num::Float(0.1));
    }
}
