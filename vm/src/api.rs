//! The embedding API: [`Vm`] (one program instance), [`Value`] and [`run_program`].
//!
//! **API Boundary.** The CLI, the REPL and embedders use only these items.

use std::cell::Cell;
use std::collections::HashMap;
use std::io::Write;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use cajeta_bytecode::{Const, Elem, Function, Module, Scalar, Type};

use crate::embed::HostFunc;
use crate::error::{ErrorCode, RuntimeError};
use crate::format;
use crate::heap::{ArrData, Array, Heap, HeapStats, Obj, NULL};
use crate::interp::{self, Frame, XInstr};
use crate::jit::{JitMode, JitState, TIER_INTERP};
use crate::output::Output;
use crate::xpu::XpuState;

/// The default call depth limit (LANGUAGE §5.4 requires at least 10 000 frames).
pub const DEFAULT_MAX_DEPTH: usize = 100_000;

/// The next [`Vm::instance`] number.
static NEXT_INSTANCE: AtomicU64 = AtomicU64::new(1);

/// Registers reserved up front (grown on demand, doubling).
const INITIAL_STACK: usize = 1 << 14;

/// A value crossing the embedding boundary.
#[derive(Clone, PartialEq, Debug)]
pub enum Value {
    /// `boolean`.
    Bool(bool),
    /// `char`: a code point (not necessarily a valid scalar value).
    Char(u32),
    /// `int8`.
    I8(i8),
    /// `uint8`.
    U8(u8),
    /// `int16`.
    I16(i16),
    /// `uint16`.
    U16(u16),
    /// `int32`.
    I32(i32),
    /// `uint32`.
    U32(u32),
    /// `int64`.
    I64(i64),
    /// `uint64`.
    U64(u64),
    /// `float32`.
    F32(f32),
    /// `float64`.
    F64(f64),
    /// A `String`, or `None` for null.
    Str(Option<String>),
    /// A new `String[]` argument (for example an entry point's `args`).
    StrArray(Vec<String>),
    /// Any other reference (array, instance), as an opaque VM handle; `Ref(0)` is null. Results
    /// of array or class type come back in this form and may be passed back in.
    Ref(u64),
}

impl Value {
    /// The §3.5 string conversion of a primitive or String value (what `result:` prints);
    /// `Ref` and `StrArray` values print as `null` or an opaque `<ref …>`.
    pub fn to_text(&self) -> String {
        match self {
            Value::Bool(b) => b.to_string(),
            Value::Char(c) => format::char_text(*c as u64).to_string(),
            Value::I8(v) => v.to_string(),
            Value::U8(v) => v.to_string(),
            Value::I16(v) => v.to_string(),
            Value::U16(v) => v.to_string(),
            Value::I32(v) => v.to_string(),
            Value::U32(v) => v.to_string(),
            Value::I64(v) => v.to_string(),
            Value::U64(v) => v.to_string(),
            Value::F32(v) => format::fmt_g(*v as f64),
            Value::F64(v) => format::fmt_g(*v),
            Value::Str(s) => s.clone().unwrap_or_else(|| "null".to_string()),
            Value::StrArray(v) => format!("<String[{}]>", v.len()),
            Value::Ref(0) => "null".to_string(),
            Value::Ref(h) => format!("<ref {h:#x}>"),
        }
    }
}

/// Per-function facts the interpreter reads on every call.
pub(crate) struct FnInfo {
    /// The address of the code new frames of this function run ([`FnInfo::code`]):
    /// `lowered`, or `osr_lowered` from the function's first call on once
    /// [`FnInfo::switch_to_osr_code`] chose it. (An address rather than a pointer, so that
    /// the VM stays `Send`.)
    code: Cell<usize>,
    /// The lowered code: one slot per bytecode instruction (see `interp/lower.rs`). Never
    /// changed after construction, so pointers into it stay valid while the VM lives.
    #[expect(
        dead_code,
        reason = "owns the code `code` points into; read through `code`"
    )]
    lowered: Box<[XInstr]>,
    /// The same code lowered with on-stack replacement points (`interp::lower`'s `osr`), for
    /// a function with loops that may start in the interpreter while its compiled code is
    /// being made (`Vm::set_jit`). Set at most once and never changed afterwards, so
    /// pointers into it stay valid too.
    osr_lowered: Option<Box<[XInstr]>>,
    /// `regs.len()`: the frame size.
    pub(crate) nregs: u32,
    /// Registers of type String: the collector's roots in this function's frames.
    pub(crate) str_regs: Box<[u16]>,
    /// `jit::TIER_INTERP`: calls go straight to the interpreter; anything else: the call
    /// takes the JIT's cold path (`Vm::slow_call`), which counts, compiles or enters native
    /// code. One byte next to `nregs`, so the interpreter's call pays one load and branch.
    pub(crate) tier: Cell<u8>,
}

/// The per-module tables a [`Vm`] derives from its module: lowered code, constant cells and
/// the collector's root maps. Built by [`Vm::new`] and again by [`Vm::replace_module`].
pub(crate) struct Loaded {
    pub(crate) fns: Vec<FnInfo>,
    pub(crate) kvals: Vec<u64>,
    pub(crate) static_str: Box<[u32]>,
    pub(crate) class_str_fields: Vec<Box<[u32]>>,
}

/// Lowers every function of `module` (with check points when `metered`), appending the
/// immediates lowering moves out of the code to `kvals`.
pub(crate) fn lower_all(module: &Module, kvals: &mut Vec<u64>, metered: bool) -> Vec<FnInfo> {
    module
        .functions
        .iter()
        .map(|f| {
            let lowered = interp::lower(f, kvals, metered, false);
            FnInfo {
                tier: Cell::new(TIER_INTERP),
                code: Cell::new(lowered.as_ptr() as usize),
                lowered,
                osr_lowered: None,
                nregs: f.regs.len() as u32,
                str_regs: f
                    .regs
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| **t == Type::Str)
                    .map(|(i, _)| i as u16)
                    .collect(),
            }
        })
        .collect()
}

impl FnInfo {
    /// The code frames of this function run: its first instruction. Jump targets, resume
    /// points and trace pcs are relative to it.
    #[inline(always)]
    pub(crate) fn code(&self) -> *const XInstr {
        self.code.get() as *const XInstr
    }

    /// Lowers `f` (this function) once more with on-stack replacement points, unless that
    /// was done already. Call only while no code runs: absorbed immediates go to `kvals`.
    pub(crate) fn lower_for_osr(&mut self, f: &Function, kvals: &mut Vec<u64>) {
        if self.osr_lowered.is_none() {
            self.osr_lowered = Some(interp::lower(f, kvals, false, true));
        }
    }

    /// Whether the function has OSR code ([`FnInfo::lower_for_osr`]).
    pub(crate) fn has_osr_code(&self) -> bool {
        self.osr_lowered.is_some()
    }

    /// Makes the frames of this function created from now on run its OSR code; false if
    /// it has none. Only while no frame of it exists: a frame's resume point and pcs
    /// belong to the code it started in.
    pub(crate) fn switch_to_osr_code(&self) -> bool {
        match &self.osr_lowered {
            Some(code) => {
                self.code.set(code.as_ptr() as usize);
                true
            }
            None => false,
        }
    }
}

impl Loaded {
    /// Lowers every function of `module` (with check points when `metered`) and allocates
    /// its constant strings in `heap`.
    pub(crate) fn new(module: &Module, heap: &mut Heap, metered: bool) -> Loaded {
        let mut kvals = module
            .consts
            .iter()
            .map(|k| match k {
                Const::Bits(b) => *b,
                // A table of 2^32 constants cannot be decoded, so allocation cannot fail here;
                // null would be the harmless fallback.
                Const::Str(s) => heap.alloc_str(s.as_str()).unwrap_or(NULL),
            })
            .collect::<Vec<u64>>();
        let fns = lower_all(module, &mut kvals, metered);
        let static_str = module
            .statics
            .iter()
            .enumerate()
            .filter(|(_, s)| s.ty == Type::Str)
            .map(|(i, _)| i as u32)
            .collect();
        let class_str_fields = module
            .classes
            .iter()
            .map(|c| {
                c.fields
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.ty == Type::Str)
                    .map(|(i, _)| i as u32)
                    .collect()
            })
            .collect();
        Loaded {
            fns,
            kvals,
            static_str,
            class_str_fields,
        }
    }
}

/// One program instance: the module, its statics, the register stack, the object table and
/// the output sinks.
///
/// ```
/// # use cajeta_vm::{Vm, Value};
/// # use cajeta_bytecode::{Function, FnKind, Instr, Op, Module, Type};
/// # use std::sync::Arc;
/// // int32 add(int32 x, int32 y) { return x + y; }
/// let add = Function {
///     name: "Main.add".into(), kind: FnKind::Host, params: 2, ret: Some(Type::I32),
///     regs: vec![Type::I32; 3],
///     code: vec![Instr::new(Op::AddI32, 2, 0, 1), Instr::new(Op::Ret, 2, 0, 0)],
///     file: 0, lines: vec![], regions: vec![], locals: vec![], shared: vec![], inlined: vec![],
/// };
/// let module = Module { files: vec!["Main.cajeta".into()], functions: vec![add], ..Default::default() };
/// let mut vm = Vm::new(Arc::new(module));
/// assert_eq!(vm.call_index(0, &[Value::I32(40), Value::I32(2)]).unwrap(), Some(Value::I32(42)));
/// ```
pub struct Vm {
    pub(crate) module: Arc<Module>,
    pub(crate) fns: Vec<FnInfo>,
    /// One cell per constant: the bits of a number, or the pinned handle of a string; then
    /// the immediates lowering moved out of fused `loadi` instructions.
    pub(crate) kvals: Vec<u64>,
    /// Static fields (zero-initialised).
    pub(crate) statics: Vec<u64>,
    /// Indices of the String-typed statics (collector roots).
    pub(crate) static_str: Box<[u32]>,
    /// Per class, the indices of its String-typed fields.
    pub(crate) class_str_fields: Vec<Box<[u32]>>,
    /// The register stack; frames are windows into it.
    pub(crate) stack: Vec<u64>,
    /// The call frames, outermost first; the last is the running one.
    pub(crate) frames: Vec<Frame>,
    pub(crate) heap: Heap,
    pub(crate) out: Output,
    /// Ownership bit of the last returned value (`takeown`).
    pub(crate) own: bool,
    pub(crate) max_depth: usize,
    /// The device runtime's state (backend, selection, default stream).
    pub(crate) xpu: XpuState,
    /// The JIT and its tiering state (`None`: [`JitMode::Off`]).
    pub(crate) jit: Option<Box<JitState>>,
    /// The first frame of the running interpreter activation: an error's trace lists
    /// `frames[frames_floor..]`; the frames below belong to activations that entered compiled
    /// code, which add their own lines (see `jit`).
    pub(crate) frames_floor: usize,
    /// Active frames not in `frames[frames_floor..]`'s count toward the depth limit (JIT frames
    /// and outer activations); `max_depth` is lowered by as much while they exist.
    pub(crate) hidden_frames: usize,
    /// Host functions registered by name ([`Vm::define_native`]).
    pub(crate) host_fns: HashMap<String, Rc<HostFunc>>,
    /// Per function of the module, the host function bound to it (native functions whose
    /// name and signature match a registration; `None` elsewhere).
    pub(crate) natives: Vec<Option<Rc<HostFunc>>>,
    /// True when the code has check points (fuel or an interrupt handle in use; see
    /// `interp::lower`): the lowered code and compiled code both depend on it.
    pub(crate) metered: bool,
    /// Remaining fuel; `i64::MAX` when unlimited. Only check points read it, and compiled
    /// code keeps its own copy in `JitContext::fuel` while it runs (synced at every
    /// crossing between the tiers).
    pub(crate) fuel: i64,
    /// Whether fuel is limited ([`Vm::set_fuel`]).
    pub(crate) fuel_limited: bool,
    /// The interrupt flag ([`Vm::interrupt_handle`]), read at every check point.
    pub(crate) interrupt: Arc<AtomicBool>,
    /// This VM's number (unique in the process): [`crate::Buffer`] handles carry it.
    pub(crate) instance: u64,
    /// Static initialisers still to run before the first by-name call (VMs made by
    /// [`Vm::instantiate`], so that host functions can be defined first).
    pub(crate) needs_init: bool,
}

impl Vm {
    /// A VM for `module` (already verified by `cajeta_bytecode::verify`), printing to the
    /// process's stdout (buffered) and stderr.
    pub fn new(module: Arc<Module>) -> Vm {
        Vm::with_sinks(module, Output::std())
    }

    /// A VM printing to the given sinks (see [`crate::Capture`] for an in-memory one).
    pub fn with_output(module: Arc<Module>, out: Box<dyn Write>, err: Box<dyn Write>) -> Vm {
        Vm::with_sinks(module, Output::new(out, err))
    }

    pub(crate) fn with_sinks(module: Arc<Module>, out: Output) -> Vm {
        let mut heap = Heap::new();
        let loaded = Loaded::new(&module, &mut heap, false);
        // The first module's constant strings are pinned: the collector never visits them.
        // (Later modules' constants are rooted through `kvals` instead; see `replace_module`.)
        heap.pin_all();
        Vm {
            statics: vec![0; module.statics.len()],
            static_str: loaded.static_str,
            class_str_fields: loaded.class_str_fields,
            fns: loaded.fns,
            kvals: loaded.kvals,
            stack: vec![0; INITIAL_STACK],
            frames: Vec::with_capacity(256),
            heap,
            out,
            own: false,
            max_depth: DEFAULT_MAX_DEPTH,
            xpu: XpuState::default(),
            jit: None,
            frames_floor: 0,
            hidden_frames: 0,
            host_fns: HashMap::new(),
            natives: Vec::new(),
            metered: false,
            fuel: i64::MAX,
            fuel_limited: false,
            interrupt: Arc::new(AtomicBool::new(false)),
            needs_init: false,
            instance: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
            module,
        }
    }

    /// The module this VM runs.
    pub fn module(&self) -> &Arc<Module> {
        &self.module
    }

    /// Sets the call depth limit (frames; at least 1). The default is [`DEFAULT_MAX_DEPTH`].
    pub fn set_max_depth(&mut self, frames: usize) {
        self.max_depth = frames.max(1);
    }

    /// The JIT mode this VM runs with ([`Vm::set_jit`]).
    pub fn jit_mode(&self) -> JitMode {
        self.jit.as_ref().map_or(JitMode::Off, |j| j.mode)
    }

    /// Object table counters (live strings and objects, allocations, collections).
    pub fn heap_stats(&self) -> HeapStats {
        self.heap.stats()
    }

    /// Runs the static initialisers (`module.init`) in order (LANGUAGE §5.8 step 1).
    ///
    /// # Errors
    ///
    /// The first runtime error an initialiser raises.
    pub fn run_static_init(&mut self) -> Result<(), RuntimeError> {
        self.needs_init = false;
        let init = self.module.init.clone();
        for f in init {
            self.call_index(f, &[])?;
        }
        Ok(())
    }

    /// Calls function `func` with `args` and returns its result (`None` for `void`).
    ///
    /// Arguments must match the parameter types exactly (a `Value::Ref` or `Value::Str(None)`
    /// is accepted for any reference parameter of a fitting kind). Results of array or class
    /// type come back as [`Value::Ref`].
    ///
    /// # Errors
    ///
    /// * `E-CALL` if `func` is out of range or the arguments do not fit the parameters;
    /// * any runtime error the call raises (LANGUAGE §10.3). The objects allocated during the
    ///   failed call are released (buffers with their device storage, so the live device bytes
    ///   return to their level before the call); statics keep their values.
    pub fn call_index(&mut self, func: u32, args: &[Value]) -> Result<Option<Value>, RuntimeError> {
        let module = Arc::clone(&self.module);
        let Some(f) = module.functions.get(func as usize) else {
            return Err(RuntimeError::new(
                ErrorCode::Call,
                format!("no function #{func}"),
            ));
        };
        if args.len() != f.params as usize || f.regs.len() < args.len() || f.code.is_empty() {
            return Err(RuntimeError::new(
                ErrorCode::Call,
                format!(
                    "{} takes {} arguments, got {}",
                    f.name,
                    f.params,
                    args.len()
                ),
            ));
        }
        let epoch = self.begin_call(func)?;
        for (i, arg) in args.iter().enumerate() {
            match self.arg_cell(arg, f.regs[i]) {
                Some(cell) => self.stack[i] = cell,
                None => {
                    self.heap.release_epoch(epoch);
                    return Err(RuntimeError::new(
                        ErrorCode::Call,
                        format!(
                            "argument {} of {}: expected {}, got {:?}",
                            i + 1,
                            f.name,
                            f.regs[i],
                            arg
                        ),
                    ));
                }
            }
        }
        let cell = self.enter(func, epoch)?;
        Ok(f.ret.map(|t| self.cell_value(cell, t)))
    }

    /// Starts a top-level call of `func` (an existing function): no frames, a stack that
    /// holds its window, a new allocation epoch (returned). The caller then writes the
    /// arguments to `stack[0..]` and calls [`Vm::enter`].
    ///
    /// # Errors
    ///
    /// `E-MEMORY` when the window does not fit in the memory limit (the register stack counts
    /// towards it, as in calls the program makes).
    pub(crate) fn begin_call(&mut self, func: u32) -> Result<u32, RuntimeError> {
        self.frames.clear();
        self.frames_floor = 0;
        self.hidden_frames = 0;
        let nregs = self.fns.get(func as usize).map_or(0, |f| f.nregs as usize);
        if self.stack.len() < nregs {
            if let Err(f) = self.grow_stack(nregs) {
                let (code, message) = self.describe(f, None);
                return Err(RuntimeError {
                    code: code.code(),
                    message,
                    trace: Vec::new(),
                });
            }
        }
        Ok(self.heap.next_epoch())
    }

    /// Runs `func` with its arguments in place (after [`Vm::begin_call`]) and returns its
    /// result cell. On an error the objects allocated since the call began are released.
    pub(crate) fn enter(&mut self, func: u32, epoch: u32) -> Result<u64, RuntimeError> {
        let result = match self.jit_entry(func) {
            Some(entry) => self.jit_enter(entry, 0),
            None => {
                self.frames.push(Frame {
                    func,
                    base: 0,
                    ip: self.fns[func as usize].code(),
                });
                interp::run(self, 0)
            }
        };
        if result.is_err() {
            self.frames.clear();
            self.heap.release_epoch(epoch);
        }
        result
    }

    /// Flushes stdout and stderr.
    pub fn flush(&mut self) {
        self.out.flush();
    }

    /// The register cell for an argument of type `ty`, or `None` if it does not fit. Strings
    /// allocated here are not yet rooted, so this never triggers a collection.
    pub(crate) fn arg_cell(&mut self, v: &Value, ty: Type) -> Option<u64> {
        Some(match (v, ty) {
            (Value::Bool(b), Type::Scalar(Scalar::Bool)) => *b as u64,
            (Value::Char(c), Type::Scalar(Scalar::Char)) => *c as u64,
            (Value::I8(x), Type::Scalar(Scalar::I8)) => *x as i64 as u64,
            (Value::U8(x), Type::Scalar(Scalar::U8)) => *x as u64,
            (Value::I16(x), Type::Scalar(Scalar::I16)) => *x as i64 as u64,
            (Value::U16(x), Type::Scalar(Scalar::U16)) => *x as u64,
            (Value::I32(x), Type::Scalar(Scalar::I32)) => *x as i64 as u64,
            (Value::U32(x), Type::Scalar(Scalar::U32)) => *x as u64,
            (Value::I64(x), Type::Scalar(Scalar::I64)) => *x as u64,
            (Value::U64(x), Type::Scalar(Scalar::U64)) => *x,
            (Value::F32(x), Type::Scalar(Scalar::F32)) => x.to_bits() as u64,
            (Value::F64(x), Type::Scalar(Scalar::F64)) => x.to_bits(),
            // float16/bfloat16 travel as float32 (results widen, arguments round once).
            (Value::F32(x), Type::Scalar(Scalar::F16)) => {
                u64::from(cajeta_bytecode::half::f32_to_f16(*x))
            }
            (Value::F32(x), Type::Scalar(Scalar::BF16)) => {
                u64::from(cajeta_bytecode::half::f32_to_bf16(*x))
            }
            (Value::Str(None), t) if t.is_ref() => NULL,
            (Value::Str(Some(s)), Type::Str) => self.heap.alloc_str(s.as_str()).ok()?,
            (Value::StrArray(items), Type::Array(Elem::Str)) => {
                let mut cells = Vec::with_capacity(items.len());
                for s in items {
                    cells.push(self.heap.alloc_str(s.as_str()).ok()?);
                }
                self.heap
                    .alloc(Obj::Array(Array {
                        elem: Elem::Str,
                        data: ArrData::Ref(cells),
                    }))
                    .ok()?
            }
            (Value::Ref(h), t) if t.is_ref() => *h,
            _ => return None,
        })
    }

    /// The embedding form of a result cell of type `ty`.
    pub(crate) fn cell_value(&self, cell: u64, ty: Type) -> Value {
        match ty {
            Type::Scalar(s) => match s {
                Scalar::Bool => Value::Bool(cell != 0),
                Scalar::Char => Value::Char(cell as u32),
                Scalar::I8 => Value::I8(cell as i8),
                Scalar::U8 => Value::U8(cell as u8),
                Scalar::I16 => Value::I16(cell as i16),
                Scalar::U16 => Value::U16(cell as u16),
                Scalar::I32 => Value::I32(cell as i32),
                Scalar::U32 => Value::U32(cell as u32),
                Scalar::I64 => Value::I64(cell as i64),
                Scalar::U64 => Value::U64(cell),
                Scalar::F32 => Value::F32(f32::from_bits(cell as u32)),
                Scalar::F64 => Value::F64(f64::from_bits(cell)),
                // float16/bfloat16 surface as their exact float32 widening.
                Scalar::F16 => Value::F32(cajeta_bytecode::half::f16_to_f32(cell as u16)),
                Scalar::BF16 => Value::F32(cajeta_bytecode::half::bf16_to_f32(cell as u16)),
            },
            Type::Str => Value::Str(self.heap.str(cell).map(str::to_string)),
            _ => Value::Ref(cell),
        }
    }

    /// The text of a String handle held by the program (`None` for null or a non-string).
    pub fn string(&self, handle: u64) -> Option<&str> {
        self.heap.str(handle)
    }
}

impl Drop for Vm {
    /// Flushes buffered stdout, so output is never lost when an embedder forgets to.
    fn drop(&mut self) {
        self.out.flush();
    }
}

/// Options of [`run_program_with`] (the CLI's `--backend` and `--mem-stats`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// The backend to use (`cpu`, `vulkan`, `cuda`, `auto`; XPU §8.1), or `None` for the
    /// environment's choice (`CAJETA_XPU_BACKEND`) or `auto`.
    pub backend: Option<String>,
    /// Print `mem-stats: live=<bytes> peak=<bytes> allocs=<n> frees=<n>` on stderr at exit.
    pub mem_stats: bool,
    /// When host functions are compiled to native code (the CLI's `--jit`, else
    /// `CAJETA_JIT`); [`JitMode::Auto`] by default.
    pub jit: JitMode,
    /// Print one line per function on stderr when the JIT compiles or refuses it (the CLI's
    /// `--jit-verbose`).
    pub jit_verbose: bool,
    /// The memory limit on host plus device bytes ([`Vm::set_memory_limit`]; the CLI's
    /// `--max-memory`, by default [`crate::system_memory_limit`]); `None`: no limit.
    pub memory_limit: Option<u64>,
}

/// Runs a whole program per LANGUAGE §5.8 and returns the process exit status.
///
/// Static initialisation, then the entry `entry` (given `args`, the words after `--`, when it
/// takes a `String[]`), then the result rule: `void` → 0; an integer → its low 8 bits
/// (`777` → 9, `-1` → 255); a float, `boolean`, `char` or `String` → prints
/// `result: <value>` and a newline on stdout, then 0; then the normal end ([`Vm::finish`]:
/// statics' objects drop, device work is waited for). A runtime error prints its
/// [`RuntimeError`] text on stderr (after flushing stdout) and gives 70.
pub fn run_program(module: Arc<Module>, entry: u32, args: &[String]) -> i32 {
    run_program_with(module, entry, args, &RunOptions::default())
}

/// Like [`run_program`], with options: the backend choice, and with `mem_stats` a last line
/// `mem-stats: live=<bytes> peak=<bytes> allocs=<n> frees=<n>` on stderr (also after a
/// runtime error) giving the device memory of the backend (all zeros if no device was ever
/// touched).
pub fn run_program_with(
    module: Arc<Module>,
    entry: u32,
    args: &[String],
    opts: &RunOptions,
) -> i32 {
    let mut vm = Vm::new(module);
    vm.set_backend_choice(opts.backend.clone());
    vm.set_jit(opts.jit, opts.jit_verbose);
    vm.set_memory_limit(opts.memory_limit);
    let status = run_program_in(&mut vm, entry, args);
    if opts.jit_verbose {
        // Only `--jit-verbose` waits for the background compiler: to report every function
        // it compiled, also those whose code the program never used.
        vm.jit_drain();
    }
    if opts.mem_stats {
        vm.print_mem_stats();
    }
    vm.flush();
    vm.output_status(status)
}

impl Vm {
    /// The exit status once the output is flushed: `status`, unless stdout could not be
    /// written and the program did not stop for it already (at a print): then as a print
    /// would have stopped it (see [`crate::output`]).
    fn output_status(&mut self, status: i32) -> i32 {
        let Some(e) = self.out.failure() else {
            return status;
        };
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            crate::interp::SIGPIPE_STATUS
        } else if status == 70 {
            status
        } else {
            let line = format!(
                "cajeta: runtime error: {}: cannot write the program's output: {e}",
                crate::error::ErrorCode::Output.code()
            );
            self.out.write(true, &line, true);
            70
        }
    }
}

impl Vm {
    /// Prints the `mem-stats:` line on stderr (see [`run_program_with`]).
    pub fn print_mem_stats(&mut self) {
        let s = self.mem_stats();
        let line = format!(
            "mem-stats: live={} peak={} allocs={} frees={}",
            s.live, s.peak, s.allocs, s.frees
        );
        self.out.write(true, &line, true);
    }
}

/// [`run_program`] on an existing VM (so tests and embedders can choose the output sinks).
pub fn run_program_in(vm: &mut Vm, entry: u32, args: &[String]) -> i32 {
    let result = vm.run_static_init().and_then(|()| {
        // An entry takes nothing, or `String[] args` — compiled as the array and its owns-flag
        // (every parameter of an owned kind is followed by one; see `Function::params`). The
        // VM keeps the title of the argument array, so the flag is false.
        let params = vm
            .module
            .functions
            .get(entry as usize)
            .map_or(0, |f| f.params);
        let argv = match params {
            0 => Vec::new(),
            1 => vec![Value::StrArray(args.to_vec())],
            _ => vec![Value::StrArray(args.to_vec()), Value::Bool(false)],
        };
        vm.call_index(entry, &argv)
    });
    let status = match result {
        Ok(None) => 0,
        Ok(Some(v)) => match v {
            Value::I8(x) => x as u8 as i32,
            Value::U8(x) => x as i32,
            Value::I16(x) => x as u8 as i32,
            Value::U16(x) => x as u8 as i32,
            Value::I32(x) => x as u8 as i32,
            Value::U32(x) => x as u8 as i32,
            Value::I64(x) => x as u8 as i32,
            Value::U64(x) => x as u8 as i32,
            Value::Ref(_) | Value::StrArray(_) => 0,
            other => {
                vm.out
                    .write(false, &format!("result: {}", other.to_text()), true);
                0
            }
        },
        // System.exit: flush and end at once with the status (LANGUAGE §5.8 step 5).
        Err(e) if e.code == crate::error::ErrorCode::Exit.code() => {
            vm.flush();
            return e.message.parse().unwrap_or(0);
        }
        Err(e) => {
            vm.out.write(true, &e.to_string(), true);
            // The program ends: what the statics own is released too (no destructors run;
            // LANGUAGE §6.4: no memory is leaked).
            vm.release_statics();
            return 70;
        }
    };
    // Normal end (§5.8 step 4): statics' objects drop, then the VM waits for device work.
    match vm.finish() {
        Ok(()) => status,
        // System.exit in a destructor of a static's object (§5.8 step 5).
        Err(e) if e.code == crate::error::ErrorCode::Exit.code() => {
            vm.flush();
            e.message.parse().unwrap_or(0)
        }
        Err(e) => {
            vm.out.write(true, &e.to_string(), true);
            70
        }
    }
}
