//! Call frames and register access.
//!
//! # Frame layout (Lua-style register windows)
//!
//! All frames live in one register stack (`Vm::stack`, a `Vec<u64>` of untyped cells). A frame
//! is the window `[base, base + regs.len())` of its function. `call a b c` starts the callee's
//! window at the caller's register `b`, so the arguments `r[b .. b+params]` *are* the callee's
//! registers `0..params`: nothing is copied. The callee's other registers are **not** cleared:
//! they hold whatever the stack held (zero, or cells of earlier frames). No instruction reads
//! one before writing it, nor reads a caller register a callee's frame covered (**V-DEF**), so
//! every value read was written with its register's type; the string collector ignores cells
//! that are not live string handles (a stale one merely keeps a string alive until the
//! register is rewritten).
//!
//! Before a call, the VM checks once that `base + regs.len()` fits in the stack (growing it if
//! not, then re-deriving the raw register pointer) and that the depth limit is not reached.
//!
//! # Register access
//!
//! The interpreter reads and writes registers through a raw window pointer with the `rd!` and
//! `wr!` macros of `interp/mod.rs`. Their soundness rests on two facts:
//! * **V-REG** (verifier): every register operand of every instruction is `< regs.len()`;
//! * **window fits** (this VM): `base + regs.len() <= stack.len()` for the running frame,
//!   established at each call and preserved because the stack only grows.
//!
//! Under `debug_assertions` or the `checked-vm` feature each access also asserts
//! `index < regs.len()`, turning a verifier hole into a panic instead of undefined behaviour.

use super::lower::{XInstr, XOp};

/// One activation record. The running frame's `ip` is stale (the interpreter keeps it in a
/// local); every other frame's `ip` is its resume point, just after its `call` instruction.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Frame {
    /// The function index.
    pub(crate) func: u32,
    /// First stack cell of the window.
    pub(crate) base: usize,
    /// Saved instruction pointer (see above).
    pub(crate) ip: *const XInstr,
}

/// True when register accesses are bounds-checked (debug builds, `checked-vm`).
pub(crate) const CHECKED: bool = cfg!(any(debug_assertions, feature = "checked-vm"));

/// The instruction being executed, read in place: the dispatch loads only the opcode and
/// each arm loads just the operands it uses, one `movzx` each, straight from the code. (Copying
/// the whole instruction instead makes LLVM decode every field up front in the shared dispatch
/// block, which costs each executed instruction several extra machine instructions.)
#[derive(Copy, Clone)]
pub(crate) struct Word(*const XInstr);

impl Word {
    /// The instruction at `ip`.
    ///
    /// # Safety
    ///
    /// `ip` must point to an `XInstr` of a code slice that outlives every use of the `Word`
    /// (the interpreter's `ip` invariant: V-JUMP, V-TERM; the VM owns the lowered code).
    #[inline(always)]
    pub(crate) unsafe fn load(ip: *const XInstr) -> Word {
        Word(ip)
    }

    /// The opcode.
    #[inline(always)]
    pub(crate) fn op(self) -> XOp {
        // SAFETY: `load`'s contract: `self.0` points to a live `XInstr`.
        unsafe { (*self.0).op }
    }

    /// Operand a.
    #[inline(always)]
    pub(crate) fn a(self) -> u16 {
        // SAFETY: as for `op`.
        unsafe { (*self.0).a }
    }

    /// Operand b.
    #[inline(always)]
    pub(crate) fn b(self) -> u16 {
        // SAFETY: as for `op`.
        unsafe { (*self.0).b }
    }

    /// Operand c.
    #[inline(always)]
    pub(crate) fn c(self) -> u16 {
        // SAFETY: as for `op`.
        unsafe { (*self.0).c }
    }

    /// The 32-bit immediate `b | c << 16`.
    #[inline(always)]
    pub(crate) fn bc(self) -> u32 {
        // SAFETY: as for `op`.
        unsafe { (*self.0).bc() }
    }
}
