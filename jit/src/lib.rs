//! The Cajeta JIT: translates verified host bytecode functions to native code with Cranelift.
//!
//! The crate depends only on `cajeta-bytecode`. Everything that touches VM objects goes
//! through [`RuntimeHooks`] supplied by the embedder (the VM), so the JIT knows nothing of
//! the object table, strings or output.
//!
//! # Using it
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use cajeta_jit::*;
//! # fn demo(module: Arc<cajeta_bytecode::Module>, hooks: RuntimeHooks, vm: *mut std::ffi::c_void) {
//! let mut jit = Jit::new(module, hooks, JitOptions::default()).expect("host not supported");
//! let f = jit.compile(0).expect("function 0 is compilable");
//! println!("compiled in {:?}", f.compile_time);
//! let mut stack = vec![0u64; 1 << 16];
//! let mut ctx = JitContext::new(vm, 100_000);
//! ctx.stack_base = stack.as_mut_ptr();
//! ctx.stack_len = stack.len() as u64;
//! // ... statics, consts; arguments into stack[0..params] ...
//! // SAFETY: the context points at live storage; the window fits in the stack.
//! let status = unsafe { f.call(&mut ctx, stack.as_mut_ptr()) };
//! # }
//! ```
//!
//! # Embedding contract
//!
//! * **Frames.** A compiled function uses the interpreter's frame layout: its registers are
//!   the window `regs[0 .. regs.len()]` of the register stack, parameters in `0..params`;
//!   `call a b c` gives the callee the window starting at register `b` and puts the result
//!   in `r[a]`. The embedder enters a function (through [`CompiledFn::call`]) with its
//!   arguments in the window and the window inside the stack.
//! * **Where registers live.** Inside compiled code registers are Cranelift variables: a
//!   JIT → JIT call passes the non-String arguments in machine registers and gets the result
//!   back the same way, so a frame that has no `String` register never touches its window
//!   (callers reserve no room for it). `String` registers always live in the window (so that
//!   a string collector scanning windows sees every live string); a function that has any
//!   makes sure its window exists in its prologue, calling [`RuntimeHooks::grow_stack`] if
//!   needed. A call that goes to the interpreter reserves the callee's window the same way
//!   and stores the arguments there first. Compiled code computes window addresses from
//!   [`JitContext::stack_base`] at each use, so the embedder may move the stack in any hook.
//! * **Agreement with the interpreter** is bit for bit (NaN payloads aside: Rust does not
//!   specify them either), as long as a program never reads a register before writing it in
//!   the same frame, nor a caller register at or above a call's window base `b` (other than
//!   the result `r[a]`) after the call. The compiler never does either; a program that does
//!   reads some other value, never undefined behaviour: registers are plain bits, and every
//!   handle goes through a hook.
//! * **Calls.** JIT → JIT calls are native calls: direct for self-recursion, otherwise through
//!   this [`Jit`]'s function table, so a function compiled later is picked up by callers
//!   compiled earlier. A callee that is not compiled runs through
//!   [`RuntimeHooks::call_interp`] (with [`JitContext::depth`] set to the calling frame's
//!   depth). So does every callee while the native stack pointer is below
//!   [`JitContext::native_stack_limit`]: deep recursion then continues on the interpreter's
//!   heap frames instead of overflowing the thread's stack. (The embedder's `call_interp`
//!   must not enter JIT code again while below that limit; a compiled function checks the
//!   limit in its own prologue and hands itself to `call_interp`, and its public entry,
//!   entered below the limit all the same, lifts the limit for that activation.)
//!   With [`JitOptions::inline_objects`] a call may also not happen at all: a callee's pure
//!   code runs in place when it returns without reaching anything else (partial inlining),
//!   and a small leaf called from a loop is spliced into its caller (`inline.rs`), both with
//!   the same results, depth limit and traces (a spliced callee's error pushes its own entry
//!   before its call site's).
//! * **Results.** A function returns a [`Status`] as `u32`. On 0 its result cell is in
//!   [`JitContext::ret`] and the ownership bit (`retown`/`takeown`) in [`JitContext::own`];
//!   the embedder copies `own` into its own state after a JIT call returns, and
//!   `call_interp` sets both before it returns.
//! * **Depth.** The embedder sets [`JitContext::depth`] to its number of active frames before
//!   entering JIT code. A compiled function entered at a depth `>= max_depth` fails with
//!   [`Status::Stack`] before it counts as a frame, so the innermost trace entry is the call
//!   site, as in the interpreter. JIT code passes the depth along in machine registers.
//! * **Errors.** A nonzero status unwinds each JIT frame after it pushes one [`TraceEntry`]
//!   (function and pc: the faulting instruction for the innermost frame, the `call` for the
//!   others) onto [`JitContext::trace`], innermost first. [`Status::DivZero`],
//!   [`Status::Overflow`], [`Status::Stack`] and [`Status::Fuel`] are raised by compiled
//!   code; any other nonzero status comes from a hook, which recorded the details itself.
//!   `System.exit` unwinds the same way with [`Status::Exit`] and the exit status in
//!   [`JitContext::ret`].
//!   The embedder builds the runtime error from the status, the trace entries (through each
//!   function's line table) and its own frames, so the text is the interpreter's.
//! * **Strings and the collector.** JIT frames are not in the embedder's frame list: while
//!   JIT code is active, a collector must treat every cell of the register stack as a
//!   possible root (conservatively; a stale cell only keeps a string alive a little longer).
//! * **On-stack replacement** (optional, [`Jit::compile_osr`]): code compiled so can also be
//!   entered at a loop header of a function the embedder started interpreting, with the
//!   interpreter's window and [`JitContext::osr_pc`] naming the header; the embedder sets
//!   `osr_pc` just before such an entry and clears it after.
//! * **No traps, no unwinding.** Compiled code never executes a hardware trap: every runtime
//!   check branches to a cold exit. Hooks must not unwind (wrap them in [`guard`]); this
//!   crate's own helpers cannot.
//! * **Fuel** (optional, [`JitOptions::fuel`]): each call and each backward jump uses one
//!   unit of [`JitContext::fuel`]; when it is exhausted the next one fails with
//!   [`Status::Fuel`]. The state at that point cannot be resumed: it is an abort. Each such
//!   check point first reads the flag [`JitContext::interrupt`] points at and fails with
//!   [`Status::Interrupted`] when it is set (another thread may set it at any time).
//!
//! Unsupported instructions (the xpu host API: buffers, streams, devices, launches) make
//! [`Jit::compile`] return an error for that function, which then stays interpreted. The
//! design, measurements and open questions are in `docs/notes/jit.md`.

#![deny(missing_docs)]

mod context;
pub mod device;
mod flatten;
mod helpers;
mod inline;
mod liveness;
mod loops;
mod osr;
mod promote;
mod tail;
mod translate;

/// Hand-assembled functions for the crate's unit tests.
#[cfg(test)]
pub(crate) mod test_function {
    use cajeta_bytecode::{FnKind, Function, Instr, Type};

    /// A function `T.f` of `kind` with `params` parameters, result `ret`, registers `regs`
    /// and code `code` (no lines, regions, locals or shared arrays).
    pub(crate) fn function(
        kind: FnKind,
        (params, ret): (u16, Option<Type>),
        regs: Vec<Type>,
        code: Vec<Instr>,
    ) -> Function {
        Function {
            name: "T.f".into(),
            kind,
            params,
            ret,
            regs,
            code,
            file: 0,
            lines: Vec::new(),
            regions: Vec::new(),
            locals: Vec::new(),
            shared: Vec::new(),
            inlined: vec![],
        }
    }
}

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use cajeta_bytecode::{FnKind, Module};
use cranelift_codegen::ir::{types, AbiParam, UserFuncName};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{ArenaMemoryProvider, JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, FuncId, Linkage, Module as _, ModuleReloc};

pub use context::{
    decode_elem, encode_elem, guard, JitContext, JitFn, ObjectView, ObjectViews, RuntimeHooks,
    Status, TraceEntry, ELEM_OWN_FLAG, ELEM_REF, ELEM_TAKE_OWNED, FIELD_CHECK_CALL,
};

/// Address space reserved for generated code (virtual: pages are committed as code is
/// generated). A compile that no longer fits fails cleanly (the function stays interpreted).
const CODE_RESERVATION: usize = 256 << 20;

/// Compilation options.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct JitOptions {
    /// Emit fuel accounting (see the crate documentation). Off by default: it costs a
    /// decrement and a branch per call and loop iteration.
    pub fuel: bool,
    /// Keep a disassembly of each compiled function (see [`Jit::disassembly`]); for
    /// debugging and `--jit-verbose`-style dumps.
    pub disasm: bool,
    /// Reach array elements and instance fields through the embedder's [`ObjectViews`]
    /// (`JitContext::views`) with a few inline instructions, falling back to the hooks only
    /// for errors and unusual objects. Off by default: the embedder must maintain the table.
    ///
    /// Also turns on *partial inlining*: at a call, the callee's pure code from its entry
    /// runs in place (its registers as variables), and the real call is made only when that
    /// code reaches anything else before a `ret` (a call, a heap access, a loop, …): leaf
    /// cases of recursions, small arithmetic functions. Such calls then no longer go through
    /// [`RuntimeHooks::call_interp`] even when the callee is not compiled, so the embedder's
    /// interpreter must compute what the bytecode says (the VM's does; a test stub may not).
    pub inline_objects: bool,
}

/// Why a function was not compiled (it then runs in the interpreter), or why the JIT could
/// not start.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct JitError {
    /// The function, if the error concerns one.
    pub func: Option<u32>,
    /// The instruction, if the error concerns one.
    pub pc: Option<u32>,
    /// What went wrong.
    pub message: String,
}

impl JitError {
    pub(crate) fn new(func: Option<u32>, pc: Option<u32>, message: String) -> JitError {
        JitError { func, pc, message }
    }
}

impl fmt::Display for JitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("jit: ")?;
        match (self.func, self.pc) {
            (Some(func), Some(pc)) => write!(f, "function #{func}, pc {pc}: ")?,
            (Some(func), None) => write!(f, "function #{func}: ")?,
            _ => {}
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for JitError {}

/// A compiled function. Its entry stays valid as long as the [`Jit`] that made it.
#[derive(Copy, Clone, Debug)]
pub struct CompiledFn {
    /// The function index.
    pub func: u32,
    entry: JitFn,
    /// Wall time of the translation and code generation (for `--jit-verbose`).
    pub compile_time: Duration,
    /// Machine code size in bytes.
    pub code_size: usize,
    /// The pc of the call to itself that runs as a loop (`return f(…)`, `return x + f(…)`),
    /// if any: a tail call's frames are not made, only counted.
    pub tail_call: Option<u32>,
    /// Whether the function was large enough to take the single-pass register allocator
    /// (see [`LARGE_FUNCTION`]).
    pub single_pass: bool,
    /// Whether the code has entries at the function's loop headers ([`Jit::compile_osr`]).
    pub osr: bool,
    /// How many array elements at loop-invariant indices its loops hold in variables
    /// instead of memory (scalar promotion).
    pub promoted: usize,
}

impl CompiledFn {
    /// The native entry point.
    pub fn entry(&self) -> JitFn {
        self.entry
    }

    /// Runs the function with its window at `regs` and returns its [`Status`] code.
    ///
    /// # Safety
    ///
    /// * the [`Jit`] that compiled it is alive;
    /// * `ctx`'s pointers are valid for the whole call: `stack_base[0..stack_len]`, one cell
    ///   per static at `statics` and per constant at `consts` (when the code uses them), and
    ///   `vm` is whatever the hooks expect;
    /// * `regs` points into the stack and the function's window `regs[0..regs.len()]` fits
    ///   in it, with the arguments in `regs[0..params]`;
    /// * no other reference to `ctx` or the stack is used while the call runs (hooks get
    ///   the context back as a raw pointer).
    pub unsafe fn call(&self, ctx: &mut JitContext, regs: *mut u64) -> u32 {
        // SAFETY: the caller's contract above is the compiled code's precondition.
        unsafe { (self.entry)(ctx, regs) }
    }
}

/// A JIT for one module: owns the generated code, the function table and the compiled
/// functions' metadata. Dropping it frees the code: no entry may run afterwards.
pub struct Jit {
    module: Arc<Module>,
    hooks: RuntimeHooks,
    options: JitOptions,
    jm: Option<JITModule>,
    /// One entry point (or 0) per function; compiled code loads callees from here. Shared
    /// with this JIT's companions ([`Jit::companion`]).
    table: Arc<[AtomicUsize]>,
    compiled: Vec<Option<CompiledFn>>,
    /// Disassemblies, when [`JitOptions::disasm`] is on.
    disasm: Vec<Option<String>>,
    /// Per compiled function, the functions whose calls it inlined ([`inline`]).
    inlined: Vec<Vec<u32>>,
    cctx: cranelift_codegen::Context,
    fctx: FunctionBuilderContext,
}

impl Jit {
    /// A JIT for `module` targeting the host CPU.
    ///
    /// # Errors
    ///
    /// If the module fails verification (the JIT relies on every verifier invariant), or
    /// the host is not supported (Cranelift has no backend for it, or pointers are not
    /// 64-bit).
    pub fn new(
        module: Arc<Module>,
        hooks: RuntimeHooks,
        options: JitOptions,
    ) -> Result<Jit, JitError> {
        cajeta_bytecode::verify(&module)
            .map_err(|e| JitError::new(None, None, format!("module not verified: {e}")))?;
        let jm = new_jit_module()?;
        let n = module.functions.len();
        Ok(Jit {
            hooks,
            options,
            cctx: jm.make_context(),
            jm: Some(jm),
            table: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            compiled: vec![None; n],
            disasm: vec![None; n],
            inlined: vec![Vec::new(); n],
            fctx: FunctionBuilderContext::new(),
            module,
        })
    }

    /// A second JIT for the same module and options that shares this one's function table:
    /// the code either compiles calls the other's functions natively, and either may run on
    /// its own thread (a background compiler). Each keeps the code it made for as long as it
    /// lives; a function must be compiled by one of them only.
    ///
    /// # Errors
    ///
    /// As [`Jit::new`] (the host is not supported).
    pub fn companion(&self) -> Result<Jit, JitError> {
        let jm = new_jit_module()?;
        let n = self.module.functions.len();
        Ok(Jit {
            hooks: self.hooks,
            options: self.options,
            cctx: jm.make_context(),
            jm: Some(jm),
            table: Arc::clone(&self.table),
            compiled: vec![None; n],
            disasm: vec![None; n],
            inlined: vec![Vec::new(); n],
            fctx: FunctionBuilderContext::new(),
            module: Arc::clone(&self.module),
        })
    }

    /// The pcs of the calls in function `func` that compiling it would splice into its code
    /// (leaf calls in loops, see [`Jit::inlined`]): their callees run there without being
    /// called.
    pub fn spliced_calls(&self, func: u32) -> Vec<u32> {
        match self.module.functions.get(func as usize) {
            Some(f) if self.options.inline_objects && !self.options.fuel => {
                inline::spliced_calls(&self.module, func, f)
            }
            _ => Vec::new(),
        }
    }

    /// The module this JIT compiles.
    pub fn module(&self) -> &Arc<Module> {
        &self.module
    }

    /// The function `func`, if it has been compiled.
    pub fn compiled(&self, func: u32) -> Option<CompiledFn> {
        self.compiled.get(func as usize).copied().flatten()
    }

    /// The machine code of compiled function `func` as text (Cranelift's disassembly), if
    /// it was compiled with [`JitOptions::disasm`].
    pub fn disassembly(&self, func: u32) -> Option<&str> {
        self.disasm.get(func as usize)?.as_deref()
    }

    /// The functions whose calls compiled function `func` inlined (spliced into its code,
    /// so they run there without being compiled or called), in call order.
    pub fn inlined(&self, func: u32) -> &[u32] {
        self.inlined
            .get(func as usize)
            .map_or(&[], |v| v.as_slice())
    }

    /// Compiles function `func` (once; later calls return the same code) and publishes it in
    /// the function table, so compiled callers call it natively from now on.
    ///
    /// # Errors
    ///
    /// If `func` is not a host function of the module, uses an instruction the JIT does not
    /// support, or code generation fails. The JIT stays usable; the function should run in
    /// the interpreter.
    pub fn compile(&mut self, func: u32) -> Result<CompiledFn, JitError> {
        self.compile_with(func, false)
    }

    /// Compiles function `func` as [`Jit::compile`] does, with an entry at each loop header
    /// as well (when [`Jit::osr_supported`]; [`CompiledFn::osr`] says whether it has them):
    /// an embedder that started running the function in its interpreter can move the
    /// activation to this code at a backward jump (*on-stack replacement*). To do so it
    /// enters the function as for a call, with the frame's window (every register as the
    /// interpreter left it) and [`JitContext::osr_pc`] set to the jump's target plus one; the
    /// code runs from that header to the function's return, with the results and errors of a
    /// call of it. A function compiled once keeps the code of its first compile.
    ///
    /// # Errors
    ///
    /// As [`Jit::compile`].
    pub fn compile_osr(&mut self, func: u32) -> Result<CompiledFn, JitError> {
        self.compile_with(func, true)
    }

    /// Whether [`Jit::compile_osr`] gives function `func` entries at its loop headers: a
    /// host function with a backward jump and nothing the JIT refuses, not too large for the
    /// liveness analysis the entries need, and this JIT without fuel (whose check points the
    /// switch would move).
    pub fn osr_supported(&self, func: u32) -> bool {
        !self.options.fuel
            && self.module.functions.get(func as usize).is_some_and(|f| {
                osr::supported(f) && !f.code.iter().any(|i| translate::unsupported(i.op))
            })
    }

    fn compile_with(&mut self, func: u32, osr: bool) -> Result<CompiledFn, JitError> {
        if let Some(c) = self.compiled(func) {
            return Ok(c);
        }
        let osr = osr && self.osr_supported(func);
        let start = Instant::now();
        let module = Arc::clone(&self.module);
        let f = module
            .functions
            .get(func as usize)
            .ok_or_else(|| JitError::new(Some(func), None, "no such function".into()))?;
        if f.kind != FnKind::Host {
            return Err(JitError::new(
                Some(func),
                None,
                "only host functions are compiled".into(),
            ));
        }
        if let Some((pc, i)) = f
            .code
            .iter()
            .enumerate()
            .find(|(_, i)| translate::unsupported(i.op))
        {
            return Err(JitError::new(
                Some(func),
                Some(pc as u32),
                format!("`{}` is not supported by the JIT", i.op.mnemonic()),
            ));
        }
        let Some(jm) = self.jm.as_mut() else {
            return Err(JitError::new(
                Some(func),
                None,
                "the JIT was shut down".into(),
            ));
        };
        let codegen = |e: cranelift_module::ModuleError| {
            JitError::new(Some(func), None, format!("code generation failed: {e}"))
        };

        let call_conv = jm.isa().default_call_conv();
        let internal_sig = translate::internal_signature(f, call_conv);
        let mut entry_sig = jm.make_signature();
        entry_sig.params.push(AbiParam::new(types::I64));
        entry_sig.params.push(AbiParam::new(types::I64));
        entry_sig.returns.push(AbiParam::new(types::I32));
        let body_id = jm
            .declare_function(&format!("cajeta_fn{func}"), Linkage::Local, &internal_sig)
            .map_err(codegen)?;
        let entry_id = jm
            .declare_function(&format!("cajeta_entry{func}"), Linkage::Local, &entry_sig)
            .map_err(codegen)?;
        let mut code_size = 0;
        let mut tail_call = None;
        let mut promoted = 0;
        let mut single_pass = false;
        // Leaf calls are spliced into the body unless that made it untranslatable.
        let mut splice = self.options.inline_objects;
        for (id, sig, is_body) in [(body_id, internal_sig, true), (entry_id, entry_sig, false)] {
            let (built, self_ref) = loop {
                jm.clear_context(&mut self.cctx);
                self.cctx.func.signature = sig.clone();
                self.cctx.func.name = UserFuncName::user(0, id.as_u32());
                let self_ref = jm.declare_func_in_func(body_id, &mut self.cctx.func);
                let setup = translate::Setup {
                    module: &module,
                    func,
                    hooks: &self.hooks,
                    table: self.table.as_ptr() as usize,
                    fuel: self.options.fuel,
                    inline_objects: self.options.inline_objects,
                    splice,
                    osr,
                    self_ref,
                    call_conv,
                    frontend: jm.target_config(),
                };
                let builder = FunctionBuilder::new(&mut self.cctx.func, &mut self.fctx);
                let built = if is_body {
                    translate::translate(builder, &setup).map(|t| {
                        if let Some(slot) = self.inlined.get_mut(func as usize) {
                            *slot = t.inlined;
                        }
                        tail_call = t.tail_call;
                        promoted = t.promoted;
                        Some(t.check)
                    })
                } else {
                    translate::entry_wrapper(builder, &setup).map(|()| None)
                };
                match built {
                    Err(_) if is_body && splice => {
                        self.fctx = FunctionBuilderContext::new();
                        splice = false;
                    }
                    built => break (built, self_ref),
                }
            };
            let native_check = match built {
                Ok(check) => check,
                Err(e) => {
                    // The builder may have stopped half-way: start the next function afresh.
                    jm.clear_context(&mut self.cctx);
                    self.fctx = FunctionBuilderContext::new();
                    return Err(e);
                }
            };
            if let Some(check) = native_check.filter(|_| translate::unroll_recursion(f, func)) {
                // A few levels of a small self-recursive function inlined into itself (its
                // errors still unwind frame by frame: the inlined body pushes its own trace
                // entry and returns its status to the call site, as a real call would). The
                // inlined copies skip the native-stack check: they are no frames of their own.
                let mut body = self.cctx.func.clone();
                if let Some(native) = body.dfg.insts[check]
                    .branch_destination(&body.dfg.jump_tables, &body.dfg.exception_tables)
                    .get(1)
                    .map(|call| call.block(&body.dfg.value_lists))
                {
                    use cranelift_codegen::ir::InstBuilder;
                    body.replace(check).jump(native, &[]);
                }
                for _ in 0..SELF_INLINE_LEVELS {
                    let inlined = self.cctx.inline(SelfInline {
                        body: &body,
                        callee: self_ref,
                    });
                    if let Err(e) = inlined {
                        jm.clear_context(&mut self.cctx);
                        let message = format!("inlining failed: {e}");
                        return Err(JitError::new(Some(func), None, message));
                    }
                }
            }
            // A debugging aid, like `CAJETA_JIT_DISASM`: the IR as translated, on stderr.
            if is_body && std::env::var_os("CAJETA_JIT_CLIF").is_some() {
                eprintln!("{}", self.cctx.func.display());
            }
            self.cctx.set_disasm(self.options.disasm && is_body);
            let defined = define(jm, id, &mut self.cctx).map(|large| {
                single_pass |= large && is_body;
            });
            code_size += self
                .cctx
                .compiled_code()
                .map_or(0, |c| c.code_buffer().len());
            if is_body {
                if let Some(slot) = self.disasm.get_mut(func as usize) {
                    *slot = self.cctx.compiled_code().and_then(|c| c.vcode.clone());
                }
            }
            jm.clear_context(&mut self.cctx);
            defined.map_err(codegen)?;
        }
        jm.finalize_definitions().map_err(codegen)?;
        let body = jm.get_finalized_function(body_id);
        let ptr = jm.get_finalized_function(entry_id);
        // SAFETY: `ptr` is the finalized code of a function declared with the signature
        // (i64, i64) -> i32 in the host's default C calling convention, which is `JitFn`'s
        // ABI (two pointers in, `u32` out).
        let entry: JitFn = unsafe { std::mem::transmute::<*const u8, JitFn>(ptr) };
        if let Some(slot) = self.table.get(func as usize) {
            // Compiled callers call the internal body (`translate::internal_signature`).
            slot.store(body as usize, Ordering::Release);
        }
        let c = CompiledFn {
            func,
            entry,
            compile_time: start.elapsed(),
            code_size,
            tail_call,
            single_pass,
            osr,
            promoted,
        };
        if let Some(slot) = self.compiled.get_mut(func as usize) {
            *slot = Some(c);
        }
        Ok(c)
    }
}

// A companion JIT compiles on a thread of its own (`Jit::companion`).
const _: fn() = || {
    fn send<T: Send>() {}
    send::<Jit>();
};

/// Levels of a small self-recursive function inlined into itself.
const SELF_INLINE_LEVELS: usize = 2;

/// Inlines a function's calls of itself with its own body (one level per pass).
struct SelfInline<'a> {
    body: &'a cranelift_codegen::ir::Function,
    callee: cranelift_codegen::ir::FuncRef,
}

impl cranelift_codegen::inline::Inline for SelfInline<'_> {
    fn inline(
        &mut self,
        caller: &cranelift_codegen::ir::Function,
        _call: cranelift_codegen::ir::Inst,
        _opcode: cranelift_codegen::ir::Opcode,
        callee: cranelift_codegen::ir::FuncRef,
        _args: &[cranelift_codegen::ir::Value],
    ) -> cranelift_codegen::inline::InlineCommand<'_> {
        use cranelift_codegen::inline::InlineCommand;
        // Inlined copies refer to the function through new references: compare the
        // resolved names.
        fn name(
            f: &cranelift_codegen::ir::Function,
            r: cranelift_codegen::ir::FuncRef,
        ) -> Option<cranelift_codegen::ir::UserExternalName> {
            match &f.dfg.ext_funcs[r].name {
                cranelift_codegen::ir::ExternalName::User(u) => {
                    Some(f.params.user_named_funcs()[*u].clone())
                }
                _ => None,
            }
        }
        let is_self =
            name(caller, callee).is_some() && name(caller, callee) == name(self.body, self.callee);
        if is_self {
            InlineCommand::Inline {
                callee: std::borrow::Cow::Borrowed(self.body),
                visit_callee: false,
            }
        } else {
            InlineCommand::KeepCall
        }
    }
}

/// The most Cranelift instructions a function may have to get the backtracking register
/// allocator. Its cost grows about with the square of a function's size (generated `main`s:
/// 17 600 instructions 70 ms, 87 000 0.7 s, 174 000 2.5 s, 1.3 million 99 s); larger
/// functions take the single-pass allocator (those four: 19 ms, 0.12 s, 0.37 s, 2.4 s),
/// whose code has more spills and moves, and skip Cranelift's optimisations, whose e-graph
/// pass also grows faster than the function (session 24, a generated `main` of 100 000
/// statements: 2.5 s with them, 0.41 s without, 7% more code). Every benchmark function is
/// far below this (nbody's `main`, with `advance` inlined: 1 325).
const LARGE_FUNCTION: usize = 20_000;

/// Defines function `id` of `jm` from `ctx`, as `JITModule::define_function` does (and
/// with its result type, hence the allowance), but compiling a function of more than
/// [`LARGE_FUNCTION`] instructions with the single-pass register allocator: its own target,
/// which differs from the module's only in that. `Ok(true)` when it did.
#[allow(clippy::result_large_err)]
pub(crate) fn define(
    jm: &mut JITModule,
    id: FuncId,
    ctx: &mut cranelift_codegen::Context,
) -> cranelift_module::ModuleResult<bool> {
    // The second target is made when the first large function needs it, not at start-up.
    static SINGLE_PASS: OnceLock<Option<OwnedTargetIsa>> = OnceLock::new();
    let large = ctx.func.dfg.num_insts() > LARGE_FUNCTION;
    let isa = large.then(|| SINGLE_PASS.get_or_init(|| host_isa("single_pass").ok()));
    let Some(isa) = isa.and_then(Option::as_deref) else {
        return jm.define_function(id, ctx).map(|()| false);
    };
    let mut ctrl = cranelift_codegen::control::ControlPlane::default();
    let alignment = ctx
        .compile(isa, &mut ctrl)
        .map_err(|e| cranelift_module::ModuleError::Compilation(e.inner))?
        .buffer
        .alignment;
    let code = ctx.compiled_code().expect("compiled just now");
    let relocs: Vec<ModuleReloc> = code
        .buffer
        .relocs()
        .iter()
        .map(|r| ModuleReloc::from_mach_reloc(r, &ctx.func, id))
        .collect();
    jm.define_function_bytes(id, u64::from(alignment), code.code_buffer(), &relocs)
        .map(|()| true)
}

/// A Cranelift JIT module for the host: optimising, position-dependent code in one
/// contiguous reservation.
pub(crate) fn new_jit_module() -> Result<JITModule, JitError> {
    let mut builder = JITBuilder::with_isa(host_isa("backtracking")?, default_libcall_names());
    // One contiguous reservation, so that direct calls between compiled functions (which
    // Cranelift emits as 32-bit pc-relative calls) always reach.
    let arena = ArenaMemoryProvider::new_with_size(CODE_RESERVATION)
        .map_err(|e| JitError::new(None, None, format!("cannot reserve code memory: {e}")))?;
    builder.memory_provider(Box::new(arena));
    Ok(JITModule::new(builder))
}

/// The host target with our flags and register allocator `regalloc` (`backtracking`, or
/// `single_pass` for large functions: [`LARGE_FUNCTION`]).
fn host_isa(regalloc: &str) -> Result<OwnedTargetIsa, JitError> {
    let fail = |what: String| JitError::new(None, None, what);
    let mut flags = settings::builder();
    let verifier = if cfg!(debug_assertions) {
        "true"
    } else {
        "false"
    };
    // The single-pass target is for functions too large to optimise quickly: Cranelift's
    // e-graph pass also grows faster than their size.
    let opt_level = if regalloc == "single_pass" {
        "none"
    } else {
        "speed"
    };
    for (k, v) in [
        ("opt_level", opt_level),
        ("regalloc_algorithm", regalloc),
        ("is_pic", "false"),
        ("use_colocated_libcalls", "false"),
        ("enable_verifier", verifier),
    ] {
        flags
            .set(k, v)
            .map_err(|e| fail(format!("cranelift setting {k}: {e}")))?;
    }
    let isa = cranelift_native::builder()
        .map_err(|e| fail(format!("host not supported: {e}")))?
        .finish(settings::Flags::new(flags))
        .map_err(|e| fail(format!("host not supported: {e}")))?;
    if isa.pointer_type() != types::I64 {
        return Err(fail("the JIT needs a 64-bit host".into()));
    }
    Ok(isa)
}

impl Drop for Jit {
    fn drop(&mut self) {
        if let Some(jm) = self.jm.take() {
            // SAFETY: by the documented contract no compiled function runs or is called
            // after its `Jit` is dropped, so the code memory can be released.
            unsafe { jm.free_memory() };
        }
    }
}
