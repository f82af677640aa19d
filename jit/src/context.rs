//! The run-time interface between JIT code and its embedder: the [`JitContext`] every compiled
//! function receives, the [`Status`] it returns, and the [`RuntimeHooks`] through which it
//! reaches VM objects.
//!
//! JIT code reads and writes only the `#[repr(C)]` fields of [`JitContext`] (at offsets taken
//! with `offset_of!`, so the layout is checked by the compiler, not by hand) and calls only the
//! hooks and this crate's own helpers. Everything else about the VM (its object table, its
//! strings, its output) stays behind the opaque [`JitContext::vm`] pointer.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::AtomicBool;

use cajeta_bytecode::{Elem, Scalar};

/// The native entry of a compiled function.
///
/// `regs` points at register 0 of the function's window in the register stack (the same frame
/// layout as the interpreter's). The result is a [`Status`] code: 0 when the function returned
/// normally (its result, if any, is in [`JitContext::ret`]), nonzero when a runtime error
/// unwound it (see [`Status`]).
///
/// # Safety
///
/// See [`crate::CompiledFn::call`]: the context must be fully set up and the window
/// `regs[0 .. regs.len()]` of the function must lie inside the register stack.
pub type JitFn = unsafe extern "C" fn(ctx: *mut JitContext, regs: *mut u64) -> u32;

/// What a compiled function returns (as a `u32`).
///
/// Every nonzero status means "a runtime error unwound this frame": the function has pushed
/// its [`TraceEntry`] onto [`JitContext::trace`] and restored [`JitContext::depth`]. Statuses
/// raised by the JIT itself carry no further data; [`Status::Error`] (or any other nonzero
/// value a hook returns, which is passed through unchanged) means the embedder recorded the
/// details when its hook failed.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
#[repr(u32)]
pub enum Status {
    /// Returned normally.
    Ok = 0,
    /// Integer division or remainder by zero (`E-DIVZERO`).
    DivZero = 1,
    /// Signed `MIN / -1` (`E-OVERFLOW`).
    Overflow = 2,
    /// The call depth limit [`JitContext::max_depth`] was reached (`E-STACK`). Raised by the
    /// callee's prologue *before* it counts as a frame, so the innermost trace entry is the
    /// call site, as in the interpreter.
    Stack = 3,
    /// [`JitContext::fuel`] ran out (only in code compiled with [`crate::JitOptions::fuel`]).
    Fuel = 4,
    /// A hook reported an error whose details the embedder keeps.
    Error = 5,
    /// A hook panicked (caught by [`guard`]); an embedder bug, never a program error.
    Panic = 6,
    /// `System.exit` (`sys.exit`): the program ends at once with the status in
    /// [`JitContext::ret`] (0..=255). Not an error; the trace entries can be ignored.
    Exit = 7,
    /// The flag [`JitContext::interrupt`] points at was set (only in code compiled with
    /// [`crate::JitOptions::fuel`], checked where fuel is used, before it).
    Interrupted = 8,
}

impl Status {
    /// Decodes a status code; `None` for a value no hook or JIT code should return.
    pub fn from_u32(v: u32) -> Option<Status> {
        Some(match v {
            0 => Status::Ok,
            1 => Status::DivZero,
            2 => Status::Overflow,
            3 => Status::Stack,
            4 => Status::Fuel,
            5 => Status::Error,
            6 => Status::Panic,
            7 => Status::Exit,
            8 => Status::Interrupted,
            _ => return None,
        })
    }
}

/// The interrupt flag of a context nobody interrupts.
static NEVER_INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// One JIT frame of an unwound error: the function and the pc of its faulting instruction
/// (innermost entry) or of its `call` (every other entry).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct TraceEntry {
    /// Function index.
    pub func: u32,
    /// Instruction index in that function's code.
    pub pc: u32,
}

/// The per-thread state JIT code works with. The embedder owns it and keeps the raw pointers
/// valid while JIT code runs.
///
/// Fields are public so the embedder can set them up and read results; their meaning is part
/// of the embedding contract (see the crate documentation).
#[repr(C)]
pub struct JitContext {
    /// The embedder's VM, opaque to JIT code; hooks receive it through the context.
    pub vm: *mut c_void,
    /// Start of the register stack (cell 0). JIT code computes window addresses from it at
    /// each use, so hooks may move the stack (updating this and `stack_len`).
    pub stack_base: *mut u64,
    /// Length of the register stack in cells. Code that needs a window past it calls
    /// [`RuntimeHooks::grow_stack`] first.
    pub stack_len: u64,
    /// The static fields, one cell each (indexed by `getstatic`/`setstatic`); must not move
    /// while JIT code runs.
    pub statics: *mut u64,
    /// One cell per constant-pool entry: the bits of a number, or the handle of a string
    /// constant (only string entries are read; numbers are compiled in as immediates).
    pub consts: *const u64,
    /// Number of active frames (interpreter and JIT) when the embedder enters JIT code. A
    /// compiled function fails with [`Status::Stack`] if the depth it is entered at is
    /// `>= max_depth`. JIT code passes the depth from frame to frame in machine registers,
    /// storing it here only before [`RuntimeHooks::call_interp`] (the calling frame's
    /// depth); the entry restores the embedder's value before it returns.
    pub depth: u64,
    /// The call depth limit.
    pub max_depth: u64,
    /// Lowest native stack address JIT → JIT calls may use (0: no limit). JIT → JIT calls
    /// recurse on the native stack; a call made with the stack pointer below this limit
    /// runs the callee through [`RuntimeHooks::call_interp`] instead, so deep recursion
    /// continues on the interpreter's heap-allocated frames rather than overflowing the
    /// thread's stack (see [`JitContext::limit_native_stack`]).
    pub native_stack_limit: u64,
    /// Remaining fuel (code compiled with [`crate::JitOptions::fuel`] only): each call and each
    /// backward jump uses one unit; at 0 the next one fails with [`Status::Fuel`].
    pub fuel: i64,
    /// The interrupt flag (code compiled with [`crate::JitOptions::fuel`] only): read at every
    /// fuel check point, before the fuel; when set, the code fails with
    /// [`Status::Interrupted`]. Another thread may set it at any time; JIT code never writes
    /// it. Must point to a live flag while JIT code runs ([`JitContext::new`] points it to a
    /// flag that is never set).
    pub interrupt: *const AtomicBool,
    /// The result cell of the last return, and the result of the last hook that produces one.
    pub ret: u64,
    /// The ownership bit of the last returned value (`takeown`): 0 or 1.
    pub own: u64,
    /// The embedder's object view table (code compiled with
    /// [`crate::JitOptions::inline_objects`] only; must then be non-null and stay valid while
    /// JIT code runs). The table itself may be reallocated by any hook: JIT code reads its
    /// pointer and length through this indirection at each access.
    pub views: *const ObjectViews,
    /// An entry at a loop header (on-stack replacement, see [`crate::Jit::compile_osr`]):
    /// the header's pc plus one, or 0 for a plain entry at pc 0. Read (and reset to 0) by the
    /// prologue of the next compiled function entered, if it was compiled with such entries;
    /// the embedder sets it just before entering that function and clears it after.
    pub osr_pc: u64,
    /// The frames of the error being unwound, innermost first (JIT code appends one entry per
    /// JIT frame through a helper; never read by JIT code). Clear it before each entry.
    pub trace: Vec<TraceEntry>,
}

/// What compiled code needs to reach an object's cells without a hook: one entry per slot of
/// the embedder's object table, indexed like handles (`(handle as u32) - 1`).
///
/// The contract (DESIGN: "inline object access", `docs/notes/jit.md`): an entry whose `tag`
/// equals `(generation << 32) | kind` for the handle's generation and the kind the
/// instruction expects describes a live object of that kind, whose `len` elements (arrays) or
/// fields (instances) of the kind's width start at address `data`; any other tag (0 for free
/// slots, strings, buffers, streams and arrays of references) sends the access to its hook,
/// which raises the error or does the work. The embedder updates an entry whenever the slot is
/// allocated or freed, and never moves an object's element storage while the object lives.
#[repr(C)]
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct ObjectView {
    /// `(generation << 32) | kind`, or 0.
    pub tag: u64,
    /// Address of element (field) 0.
    pub data: u64,
    /// Number of elements (fields).
    pub len: u64,
}

/// The view table's current location: the embedder rewrites both fields when the table grows.
#[repr(C)]
#[derive(Debug)]
pub struct ObjectViews {
    /// Address of entry 0.
    pub ptr: *const ObjectView,
    /// Number of entries.
    pub len: u64,
}

impl ObjectView {
    /// The view kind of an array of scalars `s` (1..=12: stored at the scalar's natural width,
    /// `boolean` as one byte 0/1, `char` as a 32-bit code point).
    pub fn array_kind(s: Scalar) -> u32 {
        s as u32 + 1
    }

    /// The view kind of an instance of class `class` (its fields are canonical 8-byte cells);
    /// `None` for a class index of 2^30 or more, whose instances take the hooks (the kind
    /// stays a positive 32-bit immediate in machine code).
    pub fn instance_kind(class: u32) -> Option<u32> {
        (class < 0x4000_0000).then_some(0x4000_0000 | class)
    }

    /// The tag of a live object of `kind` at `generation`.
    pub fn tag(generation: u32, kind: u32) -> u64 {
        (u64::from(generation) << 32) | u64::from(kind)
    }
}

impl JitContext {
    /// A context for `vm` with no stack, statics or constants yet (null pointers, zero
    /// lengths), depth 0 and the limit `max_depth`.
    pub fn new(vm: *mut c_void, max_depth: u64) -> JitContext {
        JitContext {
            vm,
            stack_base: std::ptr::null_mut(),
            stack_len: 0,
            statics: std::ptr::null_mut(),
            consts: std::ptr::null(),
            depth: 0,
            max_depth,
            native_stack_limit: 0,
            fuel: i64::MAX,
            interrupt: &NEVER_INTERRUPTED,
            ret: 0,
            own: 0,
            views: std::ptr::null(),
            osr_pc: 0,
            trace: Vec::new(),
        }
    }

    /// Lets JIT → JIT calls use at most about `budget` bytes of native stack below the
    /// caller of this function (which should be the embedder's entry into JIT code). The
    /// budget must leave room for the hooks' own stack use (say 256 KiB) below it.
    #[inline(never)]
    pub fn limit_native_stack(&mut self, budget: usize) {
        let here = 0u8;
        let sp = std::hint::black_box(&here) as *const u8 as usize;
        self.native_stack_limit = sp.saturating_sub(budget) as u64;
    }
}

/// Byte offsets of the context fields JIT code touches.
pub(crate) mod off {
    use super::JitContext;
    use std::mem::offset_of;

    pub const STACK_BASE: i32 = offset_of!(JitContext, stack_base) as i32;
    pub const STACK_LEN: i32 = offset_of!(JitContext, stack_len) as i32;
    pub const STATICS: i32 = offset_of!(JitContext, statics) as i32;
    pub const CONSTS: i32 = offset_of!(JitContext, consts) as i32;
    pub const DEPTH: i32 = offset_of!(JitContext, depth) as i32;
    pub const MAX_DEPTH: i32 = offset_of!(JitContext, max_depth) as i32;
    pub const NATIVE_LIMIT: i32 = offset_of!(JitContext, native_stack_limit) as i32;
    pub const FUEL: i32 = offset_of!(JitContext, fuel) as i32;
    pub const INTERRUPT: i32 = offset_of!(JitContext, interrupt) as i32;
    pub const RET: i32 = offset_of!(JitContext, ret) as i32;
    pub const OWN: i32 = offset_of!(JitContext, own) as i32;
    pub const VIEWS: i32 = offset_of!(JitContext, views) as i32;
    pub const OSR_PC: i32 = offset_of!(JitContext, osr_pc) as i32;
    pub const VIEWS_PTR: i32 = offset_of!(super::ObjectViews, ptr) as i32;
    pub const VIEWS_LEN: i32 = offset_of!(super::ObjectViews, len) as i32;
    pub const VIEW_TAG: i32 = offset_of!(super::ObjectView, tag) as i32;
    pub const VIEW_DATA: i32 = offset_of!(super::ObjectView, data) as i32;
    pub const VIEW_LEN: i32 = offset_of!(super::ObjectView, len) as i32;
    pub const VIEW_SIZE: i64 = std::mem::size_of::<super::ObjectView>() as i64;
}

/// The element kind code of `aget.ref`/`aset.ref` in [`RuntimeHooks::array_get`] and
/// [`RuntimeHooks::array_set`] (scalar elements use their [`Scalar`] code, 0..=13; codes up to
/// 31 are left to future scalars).
pub const ELEM_REF: u32 = 32;

/// The element code that makes [`RuntimeHooks::array_get`] / [`RuntimeHooks::array_set`]
/// read / write the owns-flag of a reference element (`aown.get`, `aown.set`) rather than the
/// element.
pub const ELEM_OWN_FLAG: u32 = ELEM_REF + 1;

/// The element code that makes [`RuntimeHooks::array_get`] take the owning element of highest
/// index, clearing its flag (`aown.take`; the index argument is unused).
pub const ELEM_TAKE_OWNED: u32 = ELEM_REF + 2;

/// A `field` argument of [`RuntimeHooks::get_field`] with this bit set makes it check only that
/// the object is live (`chk.obj`, the receiver of an instance call), the low 16 bits naming the
/// method called for the error message; it reads no field.
pub const FIELD_CHECK_CALL: u32 = 1 << 31;

/// Encodes an array element type for [`RuntimeHooks::new_array`]: a [`Scalar`] as its code
/// (0..=13), `String` as [`ELEM_REF`], class `k` as `2^32 + k`.
pub fn encode_elem(e: Elem) -> u64 {
    match e {
        Elem::Scalar(s) => s as u64,
        Elem::Str => u64::from(ELEM_REF),
        Elem::Object(k) => (1 << 32) | u64::from(k),
    }
}

/// Decodes [`encode_elem`]'s form.
pub fn decode_elem(code: u64) -> Option<Elem> {
    match code {
        c if c == u64::from(ELEM_REF) => Some(Elem::Str),
        c if c >> 32 == 1 => Some(Elem::Object(c as u32)),
        c if c < u64::from(ELEM_REF) => Scalar::from_u8(c as u8).map(Elem::Scalar),
        _ => None,
    }
}

/// The embedder's callbacks: everything JIT code does to VM objects goes through one of these.
///
/// Every hook receives the context (its [`JitContext::vm`] is the embedder's VM) and returns
/// a status: 0 on success, nonzero after recording the error (usually [`Status::Error`]; the
/// value is passed up unchanged). Hooks that produce a value store it in [`JitContext::ret`]
/// as a canonical cell (see `cajeta_bytecode::types`). A `reg` argument is the register of the
/// faulting function (the innermost [`TraceEntry`]'s) that holds the reference, for `E-NULL` /
/// `E-DROPPED` messages, exactly as the interpreter's.
///
/// Hooks must never unwind: wrap their bodies in [`guard`].
#[derive(Copy, Clone, Debug)]
#[repr(C)]
pub struct RuntimeHooks {
    /// Runs function `func` in the interpreter with its window at `regs` (arguments already
    /// there): result in `ret`, ownership bit in `own`. The callee's depth check is the hook's.
    pub call_interp: unsafe extern "C" fn(ctx: *mut JitContext, func: u32, regs: *mut u64) -> u32,
    /// Grows the register stack to at least `cells` cells, updating `stack_base`/`stack_len`.
    pub grow_stack: unsafe extern "C" fn(ctx: *mut JitContext, cells: u64) -> u32,
    /// `tostr.*`: the string conversion of the cell `bits` of type `scalar` (a [`Scalar`]
    /// code). Result: the new string's handle.
    pub to_string: unsafe extern "C" fn(ctx: *mut JitContext, scalar: u32, bits: u64) -> u32,
    /// `concat`: `x ++ y` (null reads as `null`).
    pub concat: unsafe extern "C" fn(ctx: *mut JitContext, x: u64, y: u64) -> u32,
    /// `fmt.fixed`: float64 `bits` with `decimals` decimals.
    pub fmt_fixed: unsafe extern "C" fn(ctx: *mut JitContext, bits: u64, decimals: u32) -> u32,
    /// `str.format`: format string `fmt` applied to `strs` (String[]) and `vals` (float64[]).
    pub format: unsafe extern "C" fn(ctx: *mut JitContext, fmt: u64, strs: u64, vals: u64) -> u32,
    /// `str.parseint`: the int64 in string `s`.
    pub parse_int: unsafe extern "C" fn(ctx: *mut JitContext, s: u64) -> u32,
    /// `str.count` (`bytes` = 0: code points) / `str.size` (`bytes` = 1: UTF-8 bytes) of
    /// string `s`.
    pub str_len: unsafe extern "C" fn(ctx: *mut JitContext, s: u64, bytes: u32) -> u32,
    /// `sys.time`: `System.currentTimeMillis()` (`selector` 0) or `System.nanoTime()` (1), as
    /// the interpreter computes them (the same clock origin).
    pub clock: unsafe extern "C" fn(ctx: *mut JitContext, selector: u32) -> u32,
    /// `eq.str`: 1 if the contents are equal (null equals only null), else 0.
    pub str_eq: unsafe extern "C" fn(ctx: *mut JitContext, x: u64, y: u64) -> u32,
    /// `print`: string `s` with the instruction's `flags` (bit 0 stderr, bit 1 newline).
    pub print: unsafe extern "C" fn(ctx: *mut JitContext, s: u64, flags: u32) -> u32,
    /// `newarr`: a zero-filled array of `len` (read as int64) elements of type `elem`
    /// ([`encode_elem`]).
    pub new_array: unsafe extern "C" fn(ctx: *mut JitContext, elem: u64, len: u64) -> u32,
    /// `arrlen`: the element count of array `arr` (held in register `reg`).
    pub array_len: unsafe extern "C" fn(ctx: *mut JitContext, arr: u64, reg: u32) -> u32,
    /// `aget.*`: element `index` (read as int64) of `arr`; `elem` is the opcode's [`Scalar`]
    /// code or [`ELEM_REF`].
    pub array_get: unsafe extern "C" fn(
        ctx: *mut JitContext,
        elem: u32,
        arr: u64,
        index: u64,
        reg: u32,
    ) -> u32,
    /// `aset.*`: stores the cell `value` at `index` of `arr`.
    pub array_set: unsafe extern "C" fn(
        ctx: *mut JitContext,
        elem: u32,
        arr: u64,
        index: u64,
        value: u64,
        reg: u32,
    ) -> u32,
    /// `newobj`: a zero-filled instance of class `class`.
    pub new_object: unsafe extern "C" fn(ctx: *mut JitContext, class: u32) -> u32,
    /// `getfield`: field `field` of `obj`.
    pub get_field:
        unsafe extern "C" fn(ctx: *mut JitContext, obj: u64, field: u32, reg: u32) -> u32,
    /// `setfield`: stores the cell `value` into field `field` of `obj`.
    pub set_field: unsafe extern "C" fn(
        ctx: *mut JitContext,
        obj: u64,
        field: u32,
        value: u64,
        reg: u32,
    ) -> u32,
    /// `drop` with a true owns-flag: releases `obj` (null or already released: nothing).
    pub release: unsafe extern "C" fn(ctx: *mut JitContext, obj: u64) -> u32,
    /// Runs the host xpu instruction `op a b c` (buffers, streams, events, device queries,
    /// launches; `abc = a | b << 16 | c << 32`) of function `func` on its frame, whose window
    /// starts at cell `base`, where compiled code has stored every register; the instruction
    /// writes its results there.
    pub xpu:
        unsafe extern "C" fn(ctx: *mut JitContext, func: u32, op: u32, abc: u64, base: u64) -> u32,
}

/// Runs a hook body, turning a panic into [`Status::Panic`] so that it never unwinds into JIT
/// code (which has no unwind tables the Rust runtime could use).
pub fn guard(f: impl FnOnce() -> u32) -> u32 {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(Status::Panic as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elem_codes_round_trip() {
        let mut all: Vec<Elem> = Scalar::ALL.iter().map(|&s| Elem::Scalar(s)).collect();
        all.extend([
            Elem::Str,
            Elem::Object(0),
            Elem::Object(7),
            Elem::Object(u32::MAX),
        ]);
        for e in all {
            assert_eq!(decode_elem(encode_elem(e)), Some(e), "{e}");
        }
        assert_eq!(decode_elem(14), None);
        assert_eq!(decode_elem(u64::from(ELEM_OWN_FLAG)), None);
        assert_eq!(decode_elem(2 << 32), None);
    }

    #[test]
    fn status_codes_round_trip() {
        for v in 0..=8 {
            assert_eq!(Status::from_u32(v).map(|s| s as u32), Some(v));
        }
        assert_eq!(Status::from_u32(9), None);
    }

    #[test]
    fn guard_catches_panics() {
        assert_eq!(guard(|| 0), 0);
        assert_eq!(guard(|| panic!("boom")), Status::Panic as u32);
    }
}
