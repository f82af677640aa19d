//! The bytecode verifier: proves, once per module, the facts the interpreter, JIT and backends
//! rely on instead of checking at run time.
//!
//! Every error has code `CJB-E-VERIFY`; its message starts with the name of the invariant that
//! failed (`V-REG: …`). The interpreter's `// SAFETY:` comments cite these names, so they are
//! stable: never rename or weaken one without updating its users.
//!
//! # Invariants proven
//!
//! Module level:
//! - **V-TYPE**: every type in the module (field, static, parameter, register and result types)
//!   names only existing classes: `Type::Object(k)` and `Elem::Object(k)` have
//!   `k < classes.len()`.
//! - **V-FILE**: every function's `file < files.len()`.
//! - **V-FRAME**: every function has `regs.len() <= 65535` and `params <= regs.len()`, so every
//!   register index that passes V-REG fits a `u16` and the parameters are registers
//!   `0..params` of the frame.
//! - **V-KERNEL**: a `Kernel` function returns `void` (XPU-K01).
//! - **V-NATIVE**: a `Native` function has no code, regions or shared declarations, line
//!   entries only at pc 0, exactly its parameters as registers, and only primitive or
//!   `String` parameter and result types. (V-TERM and the code rules do not apply to it.)
//! - **V-INIT**: every entry of `init` and of `fini` is a function index in range, of a `Host`
//!   function with 0 parameters and a `void` result.
//! - **V-ENTRY**: `entry`, if present, is a function index in range of a `Host` function.
//!
//! Per instruction (each function's code):
//! - **V-TERM**: the code is non-empty and its last instruction is a terminator
//!   ([`Op::is_terminator`]), so execution can never fall off the end: `pc + 1 < code.len()`
//!   after every non-terminator.
//! - **V-ZERO**: every operand slot the table marks `N` is 0 (slot `c` after a 32-bit `b`
//!   operand is part of `bc` and exempt).
//! - **V-REG**: every register operand (`Dst`, `Src`, and the registers of the opcode rules
//!   below) is `< regs.len()`.
//! - **V-OPTYPE**: every `Dst`/`Src` register has a type of the operand's [`RegClass`]:
//!   `Is(T)` exactly `T`; `IntLike` an integer, `char` or `boolean`; `Int` an integer; `Ref`
//!   a reference type; `Array` an array; `Object` a class instance; `Any` anything.
//! - **V-JUMP**: every jump target (`bc` of a `Target` operand) is `< code.len()`.
//! - **V-CONST**: every constant index is `< consts.len()`; `loadk` of `Const::Bits` writes a
//!   scalar register, of `Const::Str` a `String` register.
//! - **V-CANON**: `loadk` bits and `loadi` immediates are canonical for the destination's type
//!   (see [`crate::types`]): `boolean` 0 or 1; `char` and unsigned integers zero-extended;
//!   signed integers sign-extended; `float32` with its high 32 bits zero. With every opcode
//!   preserving canonical form, integer cells are canonical whenever they were written.
//! - **V-FUNC**: every function index is `< functions.len()`.
//! - **V-CLASS**: `newobj a bc`: `bc < classes.len()` and `regs[a] == Object(bc)`.
//! - **V-STATIC**: `getstatic`/`setstatic a b`: `b < statics.len()` and
//!   `regs[a] == statics[b].ty`.
//! - **V-FIELD**: `getfield a b c`: `regs[b] == Object(k)`, `c < classes[k].fields.len()`,
//!   `regs[a] ==` the field's type; `setfield a b c`: `regs[a] == Object(k)`,
//!   `b < classes[k].fields.len()`, `regs[c] ==` the field's type.
//! - **V-MATHFN**: every `MathFn` operand is a valid [`MathFn`] selector.
//! - **V-MOV**: `mov a b`: `regs[a] == regs[b]`.
//! - **V-ARRAY**: `aget.* a b c`: `regs[b] == Array(e)` and `regs[a]` is `e` as a type
//!   (`aget.T` thus needs `Array(Scalar(T))`, `aget.ref` a `String` or object array);
//!   `aset.* a b c`: likewise with the array in `a` and the value in `c`. `newarr` needs an
//!   array destination (V-OPTYPE). An array of `String` elements is also the register form of
//!   every other non-class reference element (`KernelBuffer<T>[]`, `KernelStream[]`,
//!   `Event[]`, arrays of arrays), so its element register may be any reference type but an
//!   object or a shared array.
//! - **V-AOWN**: `aown.get a b c` / `aown.take a b` have `regs[b]`, `aown.set a b c` has
//!   `regs[a]`, an array of references (`String` or object elements); `aown.take`'s `regs[a]`
//!   is a register its element may be loaded into (as for `aget.ref`).
//! - **V-CALL**: `call a b c`: the callee `F = functions[c]` (V-FUNC) may be called from this
//!   function's kind (host → `Host` or `Native`; kernel or device → `Device` only);
//!   `b + F.params <= regs.len()` and `regs[b + i] == F.regs[i]` for `i < F.params`; if
//!   `F.ret == Some(t)` then `a < regs.len()` and `regs[a] == t`, else `a == 0`. The callee's
//!   frame starts at caller register `b` and may extend beyond the caller's frame: the VM
//!   checks stack room once per call. Note `b` itself may equal `regs.len()` when `F` has no
//!   parameters.
//! - **V-DEF** (definite assignment, `verify/assign.rs`): on every path from the entry, each
//!   register an instruction reads (its `Src` operands, the destination of `fma` and the
//!   atomics, and the registers the opcode rules name: call arguments, launch windows, …) was
//!   written in this frame after the last `call` whose frame covers it. A `call a b c` leaves
//!   the caller's registers `b .. b + F.regs.len()` unwritten (the callee's values are there),
//!   except its result `a`; parameters count as written at entry. So no read sees a cell of
//!   another frame, and V-CANON holds for every value read. A function whose blocks ×
//!   registers exceed the check's budget is refused with V-DEF.
//! - **V-RET**: `ret a`: the function returns `Some(t)` and `regs[a] == t`; `retown a b`: the
//!   function returns `Some(t)` with `t` a reference type, `regs[a] == t` and `regs[b]` is
//!   `boolean`; `retvoid`: the function returns `void`.
//!
//! Debug and structure tables:
//! - **V-LINES**: line entries have `pc < code.len()` and are sorted by pc (non-decreasing).
//! - **V-REGION**: loops have `header <= cont <= merge <= code.len()`; ifs have
//!   `header < merge <= code.len()` and `cont == 0`; regions are properly nested (the ranges
//!   `header..merge` of any two regions are disjoint or one contains the other). The table may
//!   list regions in any order (the compiler emits them innermost first, as each closes);
//!   consumers that need header order sort a copy.
//! - **V-LOCAL**: every local name's register is `< regs.len()`.
//! - **V-INLINE**: every expanded call has `start <= end <= code.len()` and an existing
//!   callee; the ranges are properly nested, as regions are.
//! - **V-SIDE**: host-only opcodes (`Op::is_host_only`: objects, strings, printing, statics,
//!   buffers' host API, streams, launches) never appear in kernel or device functions, and
//!   device-only opcodes (`Op::is_device_only`: geometry, barriers, shared arrays, element
//!   access, atomics) never appear in host functions.
//! - **V-DEVMEM**: `ld.T a b c` / `atom.*.T a b c` have `regs[b]` a buffer or shared array of
//!   element `T`; `st.T a b c` has `regs[a]` one; `atom.cas.T a b c` also has
//!   `regs[a + 1] == regs[a]` (the desired value).
//! - **V-XFER**: buffer transfers (`buf.upload*`, `buf.download*`, `buf.host*`) have
//!   `regs[a] == Buffer(T)` and `regs[b] == Array(T)`.
//! - **V-SLICE**: `buf.slice a b c`: `regs[a] == regs[b]`, `regs[c]` and `regs[c+1]` are uint64.
//! - **V-SHARED**: `shared.ref a b`: `b < shared.len()` and `regs[a] == Shared(shared[b].elem)`;
//!   every shared declaration has a numeric element and `len > 0` except at most one dynamic
//!   declaration (`len == 0`, T2), and only kernels have any.
//! - **V-GEOM**: `geom a b`: `b < 17`.
//! - **V-DEVQUERY**: `device.query a b`: `b < 6` and `regs[a]` is the query's type (int32,
//!   int64 or boolean, see the opcode table).
//! - **V-FENCE**: `fence a b`: `b < 2` (workgroup or device scope).
//! - **V-KATTR**: `kattr a b c` appears only in a kernel, before any other instruction, with a
//!   known attribute `b` (see [`crate::KernelAttrs`]) and a valid value: a wave width a power of
//!   two 1…64, `maxThreads` ≥ 1, `FastMath` 1.
//! - **V-FORMAT**: `str.format a b c`: `regs[c] == String[]` and `regs[c+1] == float64[]`.
//! - **V-LAUNCH**: `launch a b`: `functions[b]` is a kernel and `regs[a..]` are `KernelStream`,
//!   seven `int64` (grid x/y/z, block x/y/z, shared bytes), then the kernel's parameter types.
//!
//! Self-check: **V-RULE** is reported for an opcode whose table row has a `Special` or
//! `Field` operand but which has no rule in this file (a bug here, never in the input).
//!
//! # Not proven yet (TODO)
//!
//! - **Structure vs. code**: V-REGION checks the shape of the region table, not that it matches
//!   the branches (that an if's header holds its conditional branch, that every jump stays
//!   inside its region or targets a loop's header/merge/continue, that every loop has one back
//!   edge). Lowerings to structured targets must not rely on more than V-REGION.
//! - **Device restrictions**: kernel and device code may still use host-only opcodes (strings,
//!   printing, host arrays, objects) and host-only register types; kernel parameter types are
//!   not checked. Recursion among device functions (impossible in SPIR-V) is not rejected.
//! - **Entry signature**: the entry's parameters and result type (LANGUAGE §5.8) are not
//!   checked.
//! - **Names**: function, class and static names are not checked for uniqueness or syntax.
//! - **Char values**: a `char` cell may hold any 32-bit value, not only a Unicode scalar value.

use std::fmt;

mod assign;

use crate::module::{Const, FnKind, Function, Module, RegionKind};
use crate::opcodes::{Instr, MathFn, Op, Operand, RegClass};
use crate::types::{Elem, Scalar, Type};

/// The code of every verifier error.
pub const VERIFY_CODE: &str = "CJB-E-VERIFY";

/// Why a module failed verification.
///
/// `message` starts with the name of the failed invariant (`V-REG: …`; see the [module
/// documentation](self) for the list).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct VerifyError {
    /// The stable error code, `CJB-E-VERIFY`.
    pub code: &'static str,
    /// The qualified name of the offending function, if the error is inside one.
    pub function: Option<String>,
    /// The offending instruction, if any.
    pub pc: Option<u32>,
    /// The failed invariant's name, then what is wrong.
    pub message: String,
}

impl VerifyError {
    /// The name of the failed invariant (`V-REG`, …): the message up to the first `:`.
    pub fn invariant(&self) -> &str {
        self.message.split(':').next().unwrap_or("")
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cajeta: error[{}]: {}", self.code, self.message)?;
        match (&self.function, self.pc) {
            (Some(func), Some(pc)) => write!(f, " (in function `{func}` at pc {pc})"),
            (Some(func), None) => write!(f, " (in function `{func}`)"),
            (None, Some(pc)) => write!(f, " (at pc {pc})"),
            (None, None) => Ok(()),
        }
    }
}

impl std::error::Error for VerifyError {}

/// Verifies a decoded (or freshly compiled) module.
///
/// On success every invariant listed in the [module documentation](self) holds, and
/// [`crate::dis::disassemble`], the interpreter and the lowerings may rely on them.
///
/// # Errors
///
/// A [`VerifyError`] with code `CJB-E-VERIFY` for the first violated invariant found
/// (module-level invariants first, then function headers in order, then function bodies in
/// order).
///
/// # Examples
///
/// ```
/// use cajeta_bytecode::*;
/// let main = Function {
///     name: "Main.main".into(),
///     kind: FnKind::Host,
///     params: 0,
///     ret: None,
///     regs: vec![],
///     code: vec![Instr::new(Op::RetVoid, 0, 0, 0)],
///     file: 0,
///     lines: vec![],
///     regions: vec![],
///     locals: vec![],
///     shared: vec![],
///     inlined: vec![],
/// };
/// let mut m = Module { files: vec!["main.cajeta".into()], functions: vec![main], ..Module::default() };
/// assert!(verify(&m).is_ok());
/// m.functions[0].code.clear();
/// assert_eq!(verify(&m).unwrap_err().invariant(), "V-TERM");
/// ```
pub fn verify(m: &Module) -> Result<(), VerifyError> {
    let v = Verifier { m };
    v.module()?;
    for f in &m.functions {
        v.header(f)?;
    }
    for f in &m.functions {
        v.body(f)?;
    }
    Ok(())
}

/// Builds an error for the invariant `rule`.
fn fail(rule: &str, function: Option<&Function>, pc: Option<u32>, what: String) -> VerifyError {
    VerifyError {
        code: VERIFY_CODE,
        function: function.map(|f| f.name.clone()),
        pc,
        message: format!("{rule}: {what}"),
    }
}

/// True if `bits` is the canonical cell of a value of type `s` (see [`crate::types`]).
pub fn is_canonical(s: Scalar, bits: u64) -> bool {
    match s {
        Scalar::Bool => bits <= 1,
        Scalar::Char | Scalar::U32 | Scalar::F32 => bits <= u64::from(u32::MAX),
        Scalar::F16 | Scalar::BF16 => bits <= u64::from(u16::MAX),
        Scalar::U8 => bits <= u64::from(u8::MAX),
        Scalar::U16 => bits <= u64::from(u16::MAX),
        Scalar::I8 => bits == bits as i8 as u64,
        Scalar::I16 => bits == bits as i16 as u64,
        Scalar::I32 => bits == bits as i32 as u64,
        Scalar::I64 | Scalar::U64 | Scalar::F64 => true,
    }
}

/// An array element type as a register type.
fn elem_type(e: Elem) -> Type {
    match e {
        Elem::Scalar(s) => Type::Scalar(s),
        Elem::Str => Type::Str,
        Elem::Object(k) => Type::Object(k),
    }
}

/// True if a register of type `t` may hold an element of an array of `e` (V-ARRAY): the
/// element's own type, or for `String`-element arrays any non-class, non-shared reference (the
/// compiler's register form of `KernelBuffer<T>[]`, `KernelStream[]`, `Event[]` and arrays of
/// arrays; every use of such a handle checks the object's kind at run time).
fn elem_holds(e: Elem, t: Type) -> bool {
    t == elem_type(e)
        || e == Elem::Str
            && matches!(
                t,
                Type::Array(_) | Type::Buffer(_) | Type::Stream | Type::Event
            )
}

/// Which operand slots of an array access hold the array and the element value.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum ArrayAccess {
    /// `aget.*`: value in `a`, array in `b`.
    Get,
    /// `aset.*`: array in `a`, value in `c`.
    Set,
}

/// The array-access shape of `op`, if it is one.
pub(crate) fn array_access(op: Op) -> Option<ArrayAccess> {
    use Op::*;
    match op {
        ArrGetBool | ArrGetChar | ArrGetI8 | ArrGetU8 | ArrGetI16 | ArrGetU16 | ArrGetI32
        | ArrGetU32 | ArrGetI64 | ArrGetU64 | ArrGetF32 | ArrGetF64 | ArrGetF16 | ArrGetBF16
        | ArrGetRef => Some(ArrayAccess::Get),
        ArrSetBool | ArrSetChar | ArrSetI8 | ArrSetU8 | ArrSetI16 | ArrSetU16 | ArrSetI32
        | ArrSetU32 | ArrSetI64 | ArrSetU64 | ArrSetF32 | ArrSetF64 | ArrSetF16 | ArrSetBF16
        | ArrSetRef => Some(ArrayAccess::Set),
        _ => None,
    }
}

/// True if `op` has an opcode-specific rule in `FnVerifier::rule`. Every opcode with a
/// `Special` or `Field` operand must have one (checked by a unit test; at run time a missing
/// rule is reported as `V-RULE`).
#[cfg(test)]
fn has_rule(op: Op) -> bool {
    use Op::*;
    array_access(op).is_some()
        || matches!(
            op,
            Mov | LoadK
                | LoadI
                | Call
                | Ret
                | RetOwn
                | RetVoid
                | GetField
                | SetField
                | GetStatic
                | SetStatic
                | NewObj
                | BufSlice
                | Launch
                | SharedRef
                | Format
                | DeviceQuery
                | ArrOwnGet
                | ArrOwnSet
                | ArrOwnTake
        )
}

/// The result type of `device.query` selector `sel`, if it is one.
pub fn device_query_type(sel: u16) -> Option<Scalar> {
    match sel {
        0 | 2 | 5 => Some(Scalar::I32),
        1 | 4 => Some(Scalar::I64),
        3 => Some(Scalar::Bool),
        _ => None,
    }
}

/// True if the operand occupies `b` and `c` together (a 32-bit `bc`).
fn is_wide(o: Operand) -> bool {
    matches!(
        o,
        Operand::Imm32 | Operand::Const | Operand::Target | Operand::Class
    )
}

struct Verifier<'m> {
    m: &'m Module,
}

impl<'m> Verifier<'m> {
    /// V-TYPE for one type.
    fn type_ok(&self, t: Type) -> bool {
        let n = self.m.classes.len();
        match t {
            Type::Object(k) | Type::Array(Elem::Object(k)) => (k as usize) < n,
            _ => true,
        }
    }

    fn check_type(&self, t: Type, f: Option<&Function>, what: &str) -> Result<(), VerifyError> {
        if self.type_ok(t) {
            Ok(())
        } else {
            Err(fail(
                "V-TYPE",
                f,
                None,
                format!(
                    "{what} names class {t} but the module has {} classes",
                    self.m.classes.len()
                ),
            ))
        }
    }

    /// Module-level invariants: V-TYPE of fields and statics, V-INIT, V-ENTRY.
    fn module(&self) -> Result<(), VerifyError> {
        let m = self.m;
        for c in &m.classes {
            for fld in &c.fields {
                self.check_type(fld.ty, None, &format!("field `{}.{}`", c.name, fld.name))?;
            }
        }
        for s in &m.statics {
            self.check_type(s.ty, None, &format!("static `{}`", s.name))?;
        }
        let lists = [
            (&m.init, "init", "an initialiser"),
            (&m.fini, "fini", "a finaliser"),
        ];
        for (list, name, what) in lists {
            for &i in list {
                let f = m.functions.get(i as usize).ok_or_else(|| {
                    fail(
                        "V-INIT",
                        None,
                        None,
                        format!("{name} function {i} does not exist"),
                    )
                })?;
                if f.kind != FnKind::Host || f.params != 0 || f.ret.is_some() {
                    return Err(fail(
                        "V-INIT",
                        Some(f),
                        None,
                        format!("{what} must be a host function without parameters returning void"),
                    ));
                }
            }
        }
        if let Some(e) = m.entry {
            let f = m.functions.get(e as usize).ok_or_else(|| {
                fail(
                    "V-ENTRY",
                    None,
                    None,
                    format!("entry function {e} does not exist"),
                )
            })?;
            if f.kind != FnKind::Host {
                return Err(fail(
                    "V-ENTRY",
                    Some(f),
                    None,
                    "the entry must be a host function".into(),
                ));
            }
        }
        Ok(())
    }

    /// Per-function invariants needed before any call site is checked: V-FRAME, V-TYPE of the
    /// signature and registers, V-KERNEL, V-FILE.
    fn header(&self, f: &Function) -> Result<(), VerifyError> {
        if f.regs.len() > usize::from(u16::MAX) {
            return Err(fail(
                "V-FRAME",
                Some(f),
                None,
                format!("{} registers (at most 65535)", f.regs.len()),
            ));
        }
        if usize::from(f.params) > f.regs.len() {
            return Err(fail(
                "V-FRAME",
                Some(f),
                None,
                format!(
                    "{} parameters but only {} registers",
                    f.params,
                    f.regs.len()
                ),
            ));
        }
        if let Some(t) = f.ret {
            self.check_type(t, Some(f), "the result type")?;
        }
        for (r, &t) in f.regs.iter().enumerate() {
            self.check_type(t, Some(f), &format!("register r{r}"))?;
        }
        if f.kind == FnKind::Native {
            self.native(f)?;
        }
        if !f.shared.is_empty() && f.kind != FnKind::Kernel {
            return Err(fail(
                "V-SHARED",
                Some(f),
                None,
                format!("a {} function has shared declarations", kind_name(f.kind)),
            ));
        }
        if let Some(d) = f.shared.iter().find(|d| !d.elem.is_numeric()) {
            return Err(fail(
                "V-SHARED",
                Some(f),
                None,
                format!("a shared array of {} (not a numeric type)", d.elem.name()),
            ));
        }
        if f.shared.iter().filter(|d| d.len == 0).count() > 1 {
            return Err(fail(
                "V-SHARED",
                Some(f),
                None,
                "more than one dynamic shared declaration".into(),
            ));
        }
        if f.kind == FnKind::Kernel && f.ret.is_some() {
            return Err(fail(
                "V-KERNEL",
                Some(f),
                None,
                "a kernel must return void".into(),
            ));
        }
        if f.file as usize >= self.m.files.len() {
            return Err(fail(
                "V-FILE",
                Some(f),
                None,
                format!(
                    "file index {} but the module has {} files",
                    f.file,
                    self.m.files.len()
                ),
            ));
        }
        Ok(())
    }

    /// V-NATIVE: a native function is a signature only.
    fn native(&self, f: &Function) -> Result<(), VerifyError> {
        let crosses = |t: Type| matches!(t, Type::Scalar(_) | Type::Str);
        let what = if !f.code.is_empty() || !f.regions.is_empty() || !f.shared.is_empty() {
            Some("has code, regions or shared declarations".to_string())
        } else if f.lines.iter().any(|e| e.pc != 0) {
            Some("has line entries past pc 0".to_string())
        } else if f.regs.len() != usize::from(f.params) {
            Some(format!(
                "has {} registers for {} parameters",
                f.regs.len(),
                f.params
            ))
        } else if let Some(t) = f.regs.iter().copied().find(|&t| !crosses(t)) {
            Some(format!(
                "takes a {t}: only primitives and String cross to the host"
            ))
        } else {
            f.ret
                .filter(|&t| !crosses(t))
                .map(|t| format!("returns a {t}: only primitives and String cross from the host"))
        };
        match what {
            Some(w) => Err(fail(
                "V-NATIVE",
                Some(f),
                None,
                format!("native function {w}"),
            )),
            None => Ok(()),
        }
    }

    /// Code and tables of one function (its header is already verified).
    fn body(&self, f: &Function) -> Result<(), VerifyError> {
        if f.kind == FnKind::Native {
            // V-NATIVE (checked with the header) leaves nothing to check here.
            return Ok(());
        }
        match f.code.last() {
            None => {
                return Err(fail(
                    "V-TERM",
                    Some(f),
                    None,
                    "the function has no code".into(),
                ))
            }
            Some(last) if !last.op.is_terminator() => {
                let pc = (f.code.len() - 1) as u32;
                return Err(fail(
                    "V-TERM",
                    Some(f),
                    Some(pc),
                    format!(
                        "the last instruction `{}` is not a terminator",
                        last.op.mnemonic()
                    ),
                ));
            }
            Some(_) => {}
        }
        let code_len = u32::try_from(f.code.len()).unwrap_or(u32::MAX);
        let fv = FnVerifier {
            v: self,
            f,
            code_len,
        };
        for (pc, &i) in f.code.iter().enumerate() {
            fv.instr(pc as u32, i)?;
        }
        fv.lines()?;
        fv.regions()?;
        fv.inlined()?;
        if let Err(e) = assign::check(self.m, f) {
            return Err(match e {
                assign::Unassigned::Read { pc, reg } => fail(
                    "V-DEF",
                    Some(f),
                    Some(pc),
                    format!(
                        "r{reg} is read, but a path reaches here without writing it (a call \
                         leaves its frame's registers, from its argument register up, unwritten)"
                    ),
                ),
                assign::Unassigned::TooLarge { blocks, regs } => fail(
                    "V-DEF",
                    Some(f),
                    None,
                    format!(
                        "the function is too large to check ({blocks} blocks of {regs} registers)"
                    ),
                ),
            });
        }
        for l in &f.locals {
            if usize::from(l.reg) >= f.regs.len() {
                return Err(fail(
                    "V-LOCAL",
                    Some(f),
                    None,
                    format!(
                        "local `{}` names register r{} of {}",
                        l.name,
                        l.reg,
                        f.regs.len()
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Verifies one function's body.
struct FnVerifier<'v, 'm> {
    v: &'v Verifier<'m>,
    f: &'m Function,
    code_len: u32,
}

impl FnVerifier<'_, '_> {
    fn err(&self, rule: &str, pc: u32, what: String) -> VerifyError {
        fail(rule, Some(self.f), Some(pc), what)
    }

    /// V-REG: the type of register `r`.
    fn reg(&self, pc: u32, r: u16) -> Result<Type, VerifyError> {
        self.f.regs.get(usize::from(r)).copied().ok_or_else(|| {
            self.err(
                "V-REG",
                pc,
                format!(
                    "register r{r} out of range (the function has {} registers)",
                    self.f.regs.len()
                ),
            )
        })
    }

    /// V-REG, then `regs[r] == want` under `rule`.
    /// V-AOWN: the owns-flag operations act on arrays of references.
    fn aown_rule(&self, pc: u32, i: Instr) -> Result<(), VerifyError> {
        let arr = if i.op == Op::ArrOwnSet { i.a } else { i.b };
        let e = match self.reg(pc, arr)? {
            Type::Array(e @ (Elem::Str | Elem::Object(_))) => e,
            t => {
                return Err(self.err(
                    "V-AOWN",
                    pc,
                    format!("r{arr} has type {t}, expected an array of references"),
                ))
            }
        };
        if i.op == Op::ArrOwnTake {
            let t = self.reg(pc, i.a)?;
            if !elem_holds(e, t) {
                return Err(self.err(
                    "V-AOWN",
                    pc,
                    format!(
                        "element register r{} has type {t}, expected {}",
                        i.a,
                        elem_type(e)
                    ),
                ));
            }
        }
        Ok(())
    }

    fn reg_is(
        &self,
        pc: u32,
        r: u16,
        want: Type,
        rule: &str,
        what: &str,
    ) -> Result<(), VerifyError> {
        let t = self.reg(pc, r)?;
        if t != want {
            return Err(self.err(
                rule,
                pc,
                format!("{what} r{r} has type {t}, expected {want}"),
            ));
        }
        Ok(())
    }

    fn instr(&self, pc: u32, i: Instr) -> Result<(), VerifyError> {
        let ops = i.op.operands();
        let vals = [i.a, i.b, i.c];
        let wide = is_wide(ops[1]);
        for (slot, (&o, &val)) in ops.iter().zip(vals.iter()).enumerate() {
            // With a 32-bit operand in `b`, slot `c` is its high half.
            if slot == 2 && wide {
                continue;
            }
            let name = ["a", "b", "c"][slot];
            let wide_val = if slot == 1 && wide {
                i.bc()
            } else {
                u32::from(val)
            };
            match o {
                Operand::N => {
                    if val != 0 {
                        return Err(self.err(
                            "V-ZERO",
                            pc,
                            format!(
                                "unused operand {name} of `{}` is {val}, not 0",
                                i.op.mnemonic()
                            ),
                        ));
                    }
                }
                Operand::Dst(class) | Operand::Src(class) => {
                    let t = self.reg(pc, val)?;
                    if !class_admits(class, t) {
                        return Err(self.err(
                            "V-OPTYPE",
                            pc,
                            format!(
                                "operand {name} of `{}`: r{val} has type {t}, expected {}",
                                i.op.mnemonic(),
                                class_name(class)
                            ),
                        ));
                    }
                }
                Operand::Imm16 | Operand::Imm32 | Operand::Field | Operand::Special => {}
                Operand::Const => {
                    if wide_val as usize >= self.v.m.consts.len() {
                        return Err(self.err(
                            "V-CONST",
                            pc,
                            format!(
                                "constant K[{wide_val}] out of range (the pool has {})",
                                self.v.m.consts.len()
                            ),
                        ));
                    }
                }
                Operand::Target => {
                    if wide_val >= self.code_len {
                        return Err(self.err(
                            "V-JUMP",
                            pc,
                            format!(
                                "jump target {wide_val} outside the code (length {})",
                                self.code_len
                            ),
                        ));
                    }
                }
                Operand::Func => {
                    if wide_val as usize >= self.v.m.functions.len() {
                        return Err(self.err(
                            "V-FUNC",
                            pc,
                            format!(
                                "function index {wide_val} out of range (the module has {})",
                                self.v.m.functions.len()
                            ),
                        ));
                    }
                }
                Operand::Class => {
                    if wide_val as usize >= self.v.m.classes.len() {
                        return Err(self.err(
                            "V-CLASS",
                            pc,
                            format!(
                                "class index {wide_val} out of range (the module has {})",
                                self.v.m.classes.len()
                            ),
                        ));
                    }
                }
                Operand::Static => {
                    if wide_val as usize >= self.v.m.statics.len() {
                        return Err(self.err(
                            "V-STATIC",
                            pc,
                            format!(
                                "static index {wide_val} out of range (the module has {})",
                                self.v.m.statics.len()
                            ),
                        ));
                    }
                }
                Operand::MathFn => {
                    if MathFn::from_u16(val).is_none() {
                        return Err(self.err(
                            "V-MATHFN",
                            pc,
                            format!("unknown math function {val}"),
                        ));
                    }
                }
            }
        }
        self.rule(pc, i)
    }

    /// Opcode-specific rules (the `Special` and `Field` operands and cross-operand
    /// constraints). Runs after the generic slot checks, so `Dst`/`Src` registers are in range
    /// and of their class, and `Const`/`Func`/`Class`/`Static` indices are in range.
    fn rule(&self, pc: u32, i: Instr) -> Result<(), VerifyError> {
        let m = self.v.m;
        let f = self.f;
        if let Some(access) = array_access(i.op) {
            let (arr, val) = match access {
                ArrayAccess::Get => (i.b, i.a),
                ArrayAccess::Set => (i.a, i.c),
            };
            let Type::Array(e) = self.reg(pc, arr)? else {
                return Err(self.err("V-ARRAY", pc, format!("r{arr} is not an array")));
            };
            let t = self.reg(pc, val)?;
            if !elem_holds(e, t) {
                return Err(self.err(
                    "V-ARRAY",
                    pc,
                    format!(
                        "element register r{val} has type {t}, expected {}",
                        elem_type(e)
                    ),
                ));
            }
            return Ok(());
        }
        // V-SIDE: host-only operations never appear in device code, and the reverse.
        let device = f.kind != FnKind::Host;
        if device && i.op.is_host_only() || !device && i.op.is_device_only() {
            return Err(self.err(
                "V-SIDE",
                pc,
                format!(
                    "`{}` is not allowed in {} code",
                    i.op.mnemonic(),
                    kind_name(f.kind)
                ),
            ));
        }
        if matches!(i.op, Op::ArrOwnGet | Op::ArrOwnSet | Op::ArrOwnTake) {
            return self.aown_rule(pc, i);
        }
        let m_ = i.op.mnemonic();
        if m_.starts_with("ld.") || m_.starts_with("st.") || m_.starts_with("atom.") {
            // V-DEVMEM: the buffer/shared operand's element type is the opcode's.
            let mem = if m_.starts_with("st.") { i.a } else { i.b };
            let want = op_elem(i.op);
            let have = devmem_elem(self.reg(pc, mem)?);
            if have.is_none() || have != want {
                return Err(self.err(
                    "V-DEVMEM",
                    pc,
                    format!(
                        "r{mem} does not hold {} elements",
                        want.map_or("?", Scalar::name)
                    ),
                ));
            }
            if m_.starts_with("atom.cas.") {
                // V-DEVMEM: the desired value is in r[a+1], of the expected value's type.
                let t = self.reg(pc, i.a)?;
                let desired = i.a.checked_add(1).ok_or_else(|| {
                    self.err("V-REG", pc, "desired value register out of range".into())
                })?;
                return self.reg_is(pc, desired, t, "V-DEVMEM", "desired value");
            }
            return Ok(());
        }
        match i.op {
            Op::BufUpload
            | Op::BufUploadN
            | Op::BufDownload
            | Op::BufDownloadN
            | Op::BufUploadAsync
            | Op::BufDownloadAsync
            | Op::BufHostStore
            | Op::BufHostLoad => {
                // V-XFER: the host array's elements are exactly the buffer's.
                let Type::Buffer(e) = self.reg(pc, i.a)? else {
                    return Err(self.err("V-XFER", pc, format!("r{} is not a buffer", i.a)));
                };
                self.reg_is(
                    pc,
                    i.b,
                    Type::Array(Elem::Scalar(e)),
                    "V-XFER",
                    "host array",
                )
            }
            Op::BufSlice => {
                // V-SLICE: same buffer type; offset and count in r[c], r[c+1] (uint64).
                let t = self.reg(pc, i.b)?;
                self.reg_is(pc, i.a, t, "V-SLICE", "destination")?;
                let u64t = Type::Scalar(Scalar::U64);
                self.reg_is(pc, i.c, u64t, "V-SLICE", "offset")?;
                let count = i.c.checked_add(1).ok_or_else(|| {
                    self.err("V-REG", pc, "slice count register out of range".into())
                })?;
                self.reg_is(pc, count, u64t, "V-SLICE", "count")
            }
            Op::Format => {
                // V-FORMAT: the argument arrays are String[] and float64[].
                self.reg_is(
                    pc,
                    i.c,
                    Type::Array(Elem::Str),
                    "V-FORMAT",
                    "argument strings",
                )?;
                let values = i.c.checked_add(1).ok_or_else(|| {
                    self.err("V-REG", pc, "format value register out of range".into())
                })?;
                self.reg_is(
                    pc,
                    values,
                    Type::Array(Elem::Scalar(Scalar::F64)),
                    "V-FORMAT",
                    "argument values",
                )
            }
            Op::SharedRef => {
                // V-SHARED: a declaration of this function, of the destination's element type.
                let Some(d) = f.shared.get(usize::from(i.b)) else {
                    return Err(self.err(
                        "V-SHARED",
                        pc,
                        format!("shared declaration {} out of range", i.b),
                    ));
                };
                self.reg_is(pc, i.a, Type::Shared(d.elem), "V-SHARED", "destination")
            }
            Op::Geom if i.b >= 17 => {
                Err(self.err("V-GEOM", pc, format!("unknown geometry selector {}", i.b)))
            }
            Op::DeviceQuery => {
                let Some(t) = device_query_type(i.b) else {
                    return Err(self.err(
                        "V-DEVQUERY",
                        pc,
                        format!("unknown device query {}", i.b),
                    ));
                };
                self.reg_is(pc, i.a, Type::Scalar(t), "V-DEVQUERY", "result")
            }
            Op::Fence if i.b >= 2 => {
                Err(self.err("V-FENCE", pc, format!("unknown fence scope {}", i.b)))
            }
            Op::KernelAttr => {
                let leading = f.code[..pc as usize].iter().all(|p| p.op == Op::KernelAttr);
                if f.kind != FnKind::Kernel || !leading {
                    return Err(self.err(
                        "V-KATTR",
                        pc,
                        "a kernel attribute outside a kernel's leading instructions".into(),
                    ));
                }
                crate::KernelAttrs::check(i.b, i.c)
                    .map_err(|why| self.err("V-KATTR", pc, why.into()))
            }
            Op::Launch => {
                // V-LAUNCH: a kernel, and a window of stream, 7 int64 and the kernel's parameters.
                let k = &m.functions[usize::from(i.b)];
                if k.kind != FnKind::Kernel {
                    return Err(self.err("V-LAUNCH", pc, format!("`{}` is not a kernel", k.name)));
                }
                let mut want = vec![Type::Stream];
                want.extend(std::iter::repeat_n(Type::Scalar(Scalar::I64), 7));
                want.extend(k.regs.iter().take(usize::from(k.params)).copied());
                for (j, t) in want.into_iter().enumerate() {
                    let r = u32::from(i.a) + j as u32;
                    let r = u16::try_from(r)
                        .map_err(|_| self.err("V-REG", pc, "launch window out of range".into()))?;
                    self.reg_is(pc, r, t, "V-LAUNCH", "launch window register")?;
                }
                Ok(())
            }
            Op::Mov => {
                let want = self.reg(pc, i.b)?;
                self.reg_is(pc, i.a, want, "V-MOV", "destination")
            }
            Op::LoadK => {
                let dst = self.reg(pc, i.a)?;
                match (m.consts.get(i.bc() as usize), dst) {
                    (Some(Const::Bits(bits)), Type::Scalar(s)) => {
                        if is_canonical(s, *bits) {
                            Ok(())
                        } else {
                            Err(self.err(
                                "V-CANON",
                                pc,
                                format!(
                                    "constant K[{}] = {bits:#x} is not a canonical {s}",
                                    i.bc()
                                ),
                            ))
                        }
                    }
                    (Some(Const::Str(_)), Type::Str) => Ok(()),
                    (Some(k), t) => {
                        let kind = if matches!(k, Const::Str(_)) {
                            "a string"
                        } else {
                            "a number"
                        };
                        Err(self.err(
                            "V-CONST",
                            pc,
                            format!("constant K[{}] is {kind} but r{} has type {t}", i.bc(), i.a),
                        ))
                    }
                    (None, _) => Err(self.err("V-CONST", pc, "constant out of range".into())),
                }
            }
            Op::LoadI => {
                let bits = i.bc() as i32 as i64 as u64;
                match self.reg(pc, i.a)? {
                    Type::Scalar(s) if is_canonical(s, bits) => Ok(()),
                    t => Err(self.err(
                        "V-CANON",
                        pc,
                        format!("immediate {} is not a canonical {t}", i.bc() as i32),
                    )),
                }
            }
            Op::NewObj => self.reg_is(pc, i.a, Type::Object(i.bc()), "V-CLASS", "destination"),
            Op::GetStatic | Op::SetStatic => {
                let Some(s) = m.statics.get(usize::from(i.b)) else {
                    return Err(self.err("V-STATIC", pc, format!("static {} out of range", i.b)));
                };
                self.reg_is(pc, i.a, s.ty, "V-STATIC", &format!("static `{}`:", s.name))
            }
            Op::GetField => {
                let ty = self.field_type(pc, i.b, i.c)?;
                self.reg_is(pc, i.a, ty, "V-FIELD", "destination")
            }
            Op::SetField => {
                let ty = self.field_type(pc, i.a, i.b)?;
                self.reg_is(pc, i.c, ty, "V-FIELD", "value")
            }
            Op::Call => self.call(pc, i),
            Op::Ret => match f.ret {
                Some(t) => self.reg_is(pc, i.a, t, "V-RET", "returned"),
                None => Err(self.err("V-RET", pc, "`ret` in a void function".into())),
            },
            Op::RetOwn => match f.ret {
                Some(t) if t.is_ref() => self.reg_is(pc, i.a, t, "V-RET", "returned"),
                Some(t) => Err(self.err(
                    "V-RET",
                    pc,
                    format!("`retown` in a function returning the non-reference type {t}"),
                )),
                None => Err(self.err("V-RET", pc, "`retown` in a void function".into())),
            },
            Op::RetVoid => match f.ret {
                None => Ok(()),
                Some(t) => Err(self.err(
                    "V-RET",
                    pc,
                    format!("`retvoid` in a function returning {t}"),
                )),
            },
            op => {
                let special = op
                    .operands()
                    .iter()
                    .any(|o| matches!(o, Operand::Special | Operand::Field));
                if special {
                    // A table row with a Special operand but no rule here: a bug in this crate,
                    // reported rather than silently accepted.
                    Err(self.err(
                        "V-RULE",
                        pc,
                        format!("no verifier rule for `{}`", op.mnemonic()),
                    ))
                } else {
                    Ok(())
                }
            }
        }
    }

    /// V-FIELD: the type of field `field` of the object in register `obj`.
    fn field_type(&self, pc: u32, obj: u16, field: u16) -> Result<Type, VerifyError> {
        let Type::Object(k) = self.reg(pc, obj)? else {
            return Err(self.err("V-FIELD", pc, format!("r{obj} is not an object")));
        };
        let Some(class) = self.v.m.classes.get(k as usize) else {
            return Err(self.err("V-FIELD", pc, format!("class {k} out of range")));
        };
        match class.fields.get(usize::from(field)) {
            Some(fld) => Ok(fld.ty),
            None => Err(self.err(
                "V-FIELD",
                pc,
                format!(
                    "field {field} out of range (class `{}` has {} fields)",
                    class.name,
                    class.fields.len()
                ),
            )),
        }
    }

    /// V-CALL.
    fn call(&self, pc: u32, i: Instr) -> Result<(), VerifyError> {
        let f = self.f;
        let Some(callee) = self.v.m.functions.get(usize::from(i.c)) else {
            return Err(self.err("V-FUNC", pc, format!("function {} out of range", i.c)));
        };
        let allowed = match f.kind {
            FnKind::Host => matches!(callee.kind, FnKind::Host | FnKind::Native),
            FnKind::Kernel | FnKind::Device => callee.kind == FnKind::Device,
            // A native function has no code, so it calls nothing.
            FnKind::Native => false,
        };
        if !allowed {
            return Err(self.err(
                "V-CALL",
                pc,
                format!(
                    "a {} function cannot call the {} function `{}`",
                    kind_name(f.kind),
                    kind_name(callee.kind),
                    callee.name
                ),
            ));
        }
        let params = u32::from(callee.params);
        if u32::from(i.b) + params > f.regs.len() as u32 {
            return Err(self.err(
                "V-CALL",
                pc,
                format!(
                    "arguments r{}..r{} of `{}` exceed the frame ({} registers)",
                    i.b,
                    u32::from(i.b) + params,
                    callee.name,
                    f.regs.len()
                ),
            ));
        }
        for p in 0..callee.params {
            let Some(&want) = callee.regs.get(usize::from(p)) else {
                return Err(self.err(
                    "V-CALL",
                    pc,
                    format!("`{}` has a malformed frame", callee.name),
                ));
            };
            // In range: i.b + p < i.b + params <= regs.len() <= 65535.
            let r = i.b + p;
            let t = self.reg(pc, r)?;
            if t != want {
                return Err(self.err(
                    "V-CALL",
                    pc,
                    format!(
                        "argument {p} of `{}` (r{r}) has type {t}, expected {want}",
                        callee.name
                    ),
                ));
            }
        }
        match callee.ret {
            Some(t) => self.reg_is(pc, i.a, t, "V-CALL", "result"),
            None if i.a == 0 => Ok(()),
            None => Err(self.err(
                "V-CALL",
                pc,
                format!(
                    "`{}` returns void, so operand a must be 0 (is {})",
                    callee.name, i.a
                ),
            )),
        }
    }

    /// V-LINES.
    fn lines(&self) -> Result<(), VerifyError> {
        let mut prev = 0;
        for (n, l) in self.f.lines.iter().enumerate() {
            if l.pc >= self.code_len || l.pc < prev {
                return Err(fail(
                    "V-LINES",
                    Some(self.f),
                    None,
                    format!(
                        "line entry {n} (pc {}) is out of order or outside the code (length {})",
                        l.pc, self.code_len
                    ),
                ));
            }
            prev = l.pc;
        }
        Ok(())
    }

    /// V-REGION.
    fn regions(&self) -> Result<(), VerifyError> {
        let f = self.f;
        let bad =
            |n: usize, what: String| fail("V-REGION", Some(f), None, format!("region {n}: {what}"));
        for (n, r) in f.regions.iter().enumerate() {
            let ok = match r.kind {
                RegionKind::Loop => {
                    r.header <= r.cont && r.cont <= r.merge && r.merge <= self.code_len
                }
                RegionKind::If => r.header < r.merge && r.merge <= self.code_len && r.cont == 0,
            };
            if !ok {
                return Err(bad(
                    n,
                    format!(
                        "malformed {} (header {}, cont {}, merge {}, code length {})",
                        if r.kind == RegionKind::Loop {
                            "loop"
                        } else {
                            "if"
                        },
                        r.header,
                        r.cont,
                        r.merge,
                        self.code_len
                    ),
                ));
            }
        }
        let ranges: Vec<(u32, u32)> = f.regions.iter().map(|r| (r.header, r.merge)).collect();
        match overlap(&ranges) {
            Some((n, top)) => Err(bad(
                n,
                format!("overlaps region {top} without nesting in it"),
            )),
            None => Ok(()),
        }
    }

    /// V-INLINE.
    fn inlined(&self) -> Result<(), VerifyError> {
        let f = self.f;
        let bad = |n: usize, what: String| {
            fail(
                "V-INLINE",
                Some(f),
                None,
                format!("inlined call {n}: {what}"),
            )
        };
        let functions = self.v.m.functions.len();
        for (n, c) in f.inlined.iter().enumerate() {
            if c.start > c.end || c.end > self.code_len {
                return Err(bad(
                    n,
                    format!(
                        "pcs {}..{} outside the code (length {})",
                        c.start, c.end, self.code_len
                    ),
                ));
            }
            if c.callee as usize >= functions {
                return Err(bad(n, format!("callee #{} does not exist", c.callee)));
            }
        }
        let ranges: Vec<(u32, u32)> = f.inlined.iter().map(|c| (c.start, c.end)).collect();
        match overlap(&ranges) {
            Some((n, top)) => Err(bad(
                n,
                format!("overlaps inlined call {top} without nesting in it"),
            )),
            None => Ok(()),
        }
    }
}

/// The first pair `(n, m)` of the ranges `start..end` that overlap without one containing the
/// other. Sorted by start and, among equal starts, outermost first, every range must end
/// inside the innermost open range that contains its start.
fn overlap(ranges: &[(u32, u32)]) -> Option<(usize, usize)> {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|&n| (ranges[n].0, std::cmp::Reverse(ranges[n].1)));
    let mut open: Vec<usize> = Vec::new();
    for n in order {
        let (start, end) = ranges[n];
        while let Some(&top) = open.last() {
            if ranges[top].1 <= start {
                open.pop();
            } else {
                break;
            }
        }
        if let Some(&top) = open.last() {
            if end > ranges[top].1 {
                return Some((n, top));
            }
        }
        open.push(n);
    }
    None
}

/// True if a register of type `t` may be an operand of class `class`.
fn class_admits(class: RegClass, t: Type) -> bool {
    match class {
        RegClass::Is(want) => t == want,
        RegClass::Any => true,
        RegClass::IntLike => {
            matches!(t, Type::Scalar(s) if s.is_int() || s == Scalar::Bool || s == Scalar::Char)
        }
        RegClass::Int => matches!(t, Type::Scalar(s) if s.is_int()),
        RegClass::Ref => t.is_ref(),
        RegClass::Array => matches!(t, Type::Array(_)),
        RegClass::Object => matches!(t, Type::Object(_)),
        RegClass::Buffer => matches!(t, Type::Buffer(_)),
        RegClass::Shared => matches!(t, Type::Shared(_)),
        RegClass::DevMem => matches!(t, Type::Buffer(_) | Type::Shared(_)),
    }
}

/// The element type of a device-memory register type.
fn devmem_elem(t: Type) -> Option<Scalar> {
    match t {
        Type::Buffer(s) | Type::Shared(s) => Some(s),
        _ => None,
    }
}

/// The element type named by a typed device-memory opcode (`ld.f32` → float32).
fn op_elem(op: Op) -> Option<Scalar> {
    let suffix = op.mnemonic().rsplit('.').next()?;
    Scalar::ALL.iter().copied().find(|s| s.suffix() == suffix)
}

/// The operand class in words, for messages.
fn class_name(class: RegClass) -> String {
    match class {
        RegClass::Is(t) => t.to_string(),
        RegClass::Any => "any type".into(),
        RegClass::IntLike => "an integer, char or boolean".into(),
        RegClass::Int => "an integer".into(),
        RegClass::Ref => "a reference".into(),
        RegClass::Array => "an array".into(),
        RegClass::Object => "an object".into(),
        RegClass::Buffer => "a buffer".into(),
        RegClass::Shared => "a shared array".into(),
        RegClass::DevMem => "a buffer or shared array".into(),
    }
}

fn kind_name(k: FnKind) -> &'static str {
    match k {
        FnKind::Host => "host",
        FnKind::Kernel => "kernel",
        FnKind::Device => "device",
        FnKind::Native => "native",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_special_or_field_opcode_has_a_rule() {
        for &op in Op::ALL {
            let needs = op
                .operands()
                .iter()
                .any(|o| matches!(o, Operand::Special | Operand::Field));
            if needs {
                assert!(
                    has_rule(op),
                    "`{}` has a Special/Field operand but no rule",
                    op.mnemonic()
                );
            }
        }
    }

    #[test]
    fn array_ops_are_all_classified() {
        for &op in Op::ALL {
            let mn = op.mnemonic();
            let expect = if mn.starts_with("aget.") {
                Some(ArrayAccess::Get)
            } else if mn.starts_with("aset.") {
                Some(ArrayAccess::Set)
            } else {
                None
            };
            assert_eq!(array_access(op), expect, "{mn}");
        }
    }

    #[test]
    fn canonical_forms() {
        assert!(is_canonical(Scalar::Bool, 1));
        assert!(!is_canonical(Scalar::Bool, 2));
        assert!(is_canonical(Scalar::I8, (-1i64) as u64));
        assert!(!is_canonical(Scalar::I8, 0xff));
        assert!(is_canonical(Scalar::U8, 0xff));
        assert!(!is_canonical(Scalar::U8, (-1i64) as u64));
        assert!(is_canonical(Scalar::I32, i32::MIN as i64 as u64));
        assert!(!is_canonical(Scalar::I32, 0x8000_0000));
        assert!(is_canonical(Scalar::U32, 0x8000_0000));
        assert!(!is_canonical(Scalar::F32, 1 << 32));
        assert!(is_canonical(Scalar::F64, u64::MAX));
        assert!(is_canonical(Scalar::Char, 0x10_ffff));
    }
}
