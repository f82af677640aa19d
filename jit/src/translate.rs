//! Bytecode → Cranelift IR for one verified host function.
//!
//! # Shape of the generated code
//!
//! * **Registers** are Cranelift variables (SSA after construction), typed by the register's
//!   bytecode type: `float64` as `f64`, `float32` as `f32`, every other scalar and reference
//!   as the `i64` cell. `String` registers are the exception: they live in the register
//!   window in memory (every read loads, every write stores), so that the embedder's string
//!   collector, which scans register windows, always sees every live string.
//! * **Internal calling convention.** Each function is compiled twice over: an *internal*
//!   body `(ctx, window offset, depth, params…) -> (status | own << 32, result cell)` that
//!   JIT code calls natively, with the non-String parameters in machine registers, the
//!   caller's depth as an argument and the result, status and ownership bit in return
//!   registers; and a small *entry* wrapper with the public [`crate::JitFn`] signature that loads the
//!   parameters from the window and the depth from the context, and stores the result and
//!   ownership bit back into the context. Only a call that goes to the interpreter stores
//!   its arguments into the window. Other registers are never written back: the
//!   interpreter's callers and callees do not read them either (see the crate documentation
//!   for the exact contract).
//! * **Blocks**: one Cranelift block per bytecode leader (pc 0, jump targets, the instruction
//!   after a branch or terminator); instructions that can fail add a fall-through block.
//! * **Errors** branch to one cold block per function, with the status and the faulting pc as
//!   block parameters; it pushes the trace entry, writes the fuel back and returns the
//!   status. No instruction can trap in hardware: divisions are guarded before they run
//!   (Cranelift installs no trap handler).

use std::collections::HashMap;

use cajeta_bytecode::{Const, Function, Instr, MathFn, Module, Op, Operand, Scalar, Type};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::immediates::{Ieee32, Ieee64};
use cranelift_codegen::ir::{
    types, AbiParam, AliasRegionData, Block, BlockArg, FuncRef, Inst, InstBuilder, InstructionData,
    MemFlagsData, Opcode, SigRef, Signature, StackSlot, StackSlotData, StackSlotKind, Value,
    ValueDef,
};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, Variable};

use crate::context::{
    encode_elem, off, ObjectView, RuntimeHooks, Status, ELEM_OWN_FLAG, ELEM_REF, ELEM_TAKE_OWNED,
    FIELD_CHECK_CALL,
};
use crate::helpers;
use crate::inline;
use crate::loops::{self, HoistedLoop};
use crate::osr;
use crate::tail::{self, FoldOp, FoldOperand, TailCall};

mod device;
mod lanes_facts;
mod lockstep;
mod promote;
mod simd;
use crate::JitError;
pub(crate) use device::rendezvous;
pub use device::rendezvous_sites;
pub(crate) use device::{translate_kernel, Shape};
pub(crate) use simd::{plan as simd_plan, turn_layout, Plan as SimdPlan, Variant as SimdVariant};

const I8: types::Type = types::I8;
const I16: types::Type = types::I16;
const I32: types::Type = types::I32;
const I64: types::Type = types::I64;
const F32: types::Type = types::F32;
const F64: types::Type = types::F64;

/// Loads and stores of the context, the register window, statics and constants: aligned and
/// never trapping (the embedder keeps every pointer valid; V-REG/V-STATIC/V-CONST bound the
/// offsets).
const MF: MemFlagsData = MemFlagsData::trusted();

/// Everything the translation of one function needs from its surroundings.
pub(crate) struct Setup<'a> {
    /// The (verified) module.
    pub module: &'a Module,
    /// Index of the function to translate.
    pub func: u32,
    /// The embedder's hooks (their addresses are compiled in).
    pub hooks: &'a RuntimeHooks,
    /// Address of the function table (one `usize` entry point or 0 per function).
    pub table: usize,
    /// Emit fuel accounting.
    pub fuel: bool,
    /// Inline array and field access through the object views, and the pure prefix of
    /// callees ([`Tr::inline_prefix`]) (`JitOptions::inline_objects`).
    pub inline_objects: bool,
    /// Splice small leaf callees of loops into the function ([`crate::inline`]; only with
    /// `inline_objects` and without fuel).
    pub splice: bool,
    /// Give the function entries at its loop headers ([`crate::osr`]; not with fuel).
    pub osr: bool,
    /// A direct reference to the function's internal body (self-recursion needs no table
    /// load; the entry wrapper calls it).
    pub self_ref: FuncRef,
    /// The host's C calling convention (hooks, helpers, compiled functions).
    pub call_conv: CallConv,
    /// For [`FunctionBuilder::finalize`].
    pub frontend: TargetFrontendConfig,
}

/// How a register is held.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Kind {
    /// An `i64` variable (integers, `boolean`, `char`, non-String references).
    Int,
    /// An `f32` variable.
    F32,
    /// An `f64` variable.
    F64,
    /// In memory (String registers).
    Mem,
}

impl Kind {
    /// The Cranelift type of a register of this kind's variable (`i64` for `Mem` registers,
    /// loaded).
    fn ty(self) -> types::Type {
        match self {
            Kind::F64 => F64,
            Kind::F32 => F32,
            Kind::Int | Kind::Mem => I64,
        }
    }
}

/// The shared error exit (params: status `i32`, pc `i32`; cold) and the block of each leader.
fn fault_and_blocks(b: &mut FunctionBuilder<'_>, leader: &[bool]) -> (Block, Vec<Option<Block>>) {
    let fault = b.create_block();
    b.set_cold_block(fault);
    b.append_block_param(fault, I32);
    b.append_block_param(fault, I32);
    let blocks = leader
        .iter()
        .map(|&l| l.then(|| b.create_block()))
        .collect();
    (fault, blocks)
}

/// One variable per register, of its kind's type.
fn declare_vars(b: &mut FunctionBuilder<'_>, kinds: &[Kind]) -> Vec<Variable> {
    kinds.iter().map(|k| b.declare_var(k.ty())).collect()
}

fn kind_of(t: Type) -> Kind {
    match t {
        Type::Scalar(Scalar::F64) => Kind::F64,
        Type::Scalar(Scalar::F32) => Kind::F32,
        Type::Str => Kind::Mem,
        _ => Kind::Int,
    }
}

/// True for opcodes this JIT does not compile (the function then stays interpreted): the
/// xpu host API (buffers, streams, devices, launches: its runtime lives in the VM, and such
/// code is bound by transfers and launches, not by dispatch), and device-only operations,
/// which never occur in host code.
pub(crate) fn unsupported(op: Op) -> bool {
    op.is_device_only()
}

/// Whether `f` is small and calls itself: its compiled body then gets one level of its
/// self-calls inlined (fib-like recursion pays a prologue and an epilogue per call otherwise).
pub(crate) fn unroll_recursion(f: &Function, index: u32) -> bool {
    const MAX_INSTRUCTIONS: usize = 48;
    f.code.len() <= MAX_INSTRUCTIONS
        && f.code
            .iter()
            .any(|i| i.op == Op::Call && u32::from(i.c) == index)
}

/// The host side of the xpu API (buffers, streams, events, device queries, launches): run by
/// the embedder's `xpu` hook on the registers in the window.
pub(crate) fn xpu_host(op: Op) -> bool {
    let m = op.mnemonic();
    !op.is_device_only()
        && (m.starts_with("buf.")
            || m.starts_with("stream.")
            || m.starts_with("event.")
            || m.starts_with("device.")
            || op == Op::Launch)
}

/// The scalar named by a mnemonic suffix (`add.i32` → `int32`).
fn suffix_scalar(suffix: &str) -> Option<Scalar> {
    Scalar::ALL.iter().copied().find(|s| s.suffix() == suffix)
}

/// What [`translate`] tells its caller besides the code.
pub(crate) struct Translated {
    /// The prologue's native-stack branch ([`Tr::native_stack_check`]): a copy of the body
    /// inlined into itself makes it a jump (an inlined frame uses no stack of its own worth
    /// checking, and the repeated check would keep the stack pointer live).
    pub check: Inst,
    /// The callees of the calls spliced in ([`crate::inline`]).
    pub inlined: Vec<u32>,
    /// The pc (in the function's own code) of the self-call made a loop ([`crate::tail`]).
    pub tail_call: Option<u32>,
    /// How many array elements loops hold in variables ([`crate::promote`]).
    pub promoted: usize,
}

/// Translates `f` into `b`'s function. On error the builder is left unfinished; the caller
/// discards it (and its builder context).
pub(crate) fn translate(b: FunctionBuilder<'_>, s: &Setup<'_>) -> Result<Translated, JitError> {
    let f = s
        .module
        .functions
        .get(s.func as usize)
        .ok_or_else(|| JitError::new(Some(s.func), None, "no such function".into()))?;
    // Leaf calls in loops are spliced in first (not with fuel: a call is a unit of it).
    let inlined = (s.splice && s.inline_objects && !s.fuel)
        .then(|| inline::leaf_calls(s.module, s.func, f))
        .flatten();
    let (f, sites) = match &inlined {
        Some(i) => (&i.f, i.sites.clone()),
        None => (f, Vec::new()),
    };
    let (mut tr, check) = Tr::prologue(b, s, f);
    let inlined = sites.iter().map(|site| site.callee).collect();
    tr.sites = sites;
    tr.plan_promotions();
    tr.start()?;
    tr.body()?;
    tr.fill_deferred();
    tr.fill_promoted();
    tr.fault_block();
    let tail_call = tr
        .tail
        .as_ref()
        .map(|t| inline::origin(&tr.sites, t.call.pc).1);
    tr.b.seal_all_blocks();
    tr.b.finalize(s.frontend);
    let promoted = tr.promoted.iter().map(|p| p.p.candidates.len()).sum();
    Ok(Translated {
        check,
        inlined,
        tail_call,
        promoted,
    })
}

impl Tr<'_, '_> {
    /// Translates every instruction of the function, block by block.
    fn body(&mut self) -> Result<(), JitError> {
        let f = self.f;
        let tr = self;
        let n = f.code.len();
        let mut terminated = true;
        // Where the current block splits into two versions (see `versioned`).
        let mut split = None;
        for (pc, &ins) in f.code.iter().enumerate() {
            if let Some(blk) = tr.blocks[pc] {
                // A hoisting loop's header is entered from above through its preheader.
                let entry = match pc.checked_sub(1) {
                    Some(prev) => tr.branch_block(prev as u32, pc as u32).unwrap_or(blk),
                    None => blk,
                };
                if !terminated {
                    let exit = match pc.checked_sub(1) {
                        Some(prev) => tr.exit_edge(prev as u32, pc as u32, entry),
                        None => entry,
                    };
                    tr.b.ins().jump(exit, &[]);
                }
                if entry != blk {
                    tr.preheader(pc as u32, blk)?;
                }
                tr.b.switch_to_block(blk);
            } else if terminated {
                // Unreachable and not a leader (code after `sys.exit`): nothing to translate.
                continue;
            }
            if tr.blocks[pc].is_some() {
                tr.checked.clear();
                tr.seen.clear();
                split = tr.version_point(pc);
            }
            if let Some((at, end, pairs, early)) = split.take_if(|(at, ..)| *at == pc) {
                tr.versioned(at, end, pairs, &early)?;
            }
            terminated = tr.instr(pc as u32, ins)?;
            // A check is about the registers' values: forget it when one is written.
            tr.checked
                .retain(|&(a, x)| !loops::writes(&ins, a) && !loops::writes(&ins, x));
            tr.forget_views(pc, &ins);
        }
        if !terminated || n == 0 {
            // V-TERM: the last instruction is a terminator.
            return Err(JitError::new(
                Some(tr.s.func),
                None,
                "code does not end in a terminator".into(),
            ));
        }
        Ok(())
    }
}

impl Tr<'_, '_> {
    /// Block versioning of bounds checks, for a bytecode block starting at `start` inside a
    /// hoisting loop whose element accesses use one index register with several arrays
    /// (nbody: `x[i]`, `y[i]`, `vx[i]`, …, `x[j]`, …). From the split point (just after the
    /// block's last write of an index or array register that a later access uses) to the
    /// block's end, the block gets two translations: the usual *checked* one, and an
    /// *unchecked* one, chosen by one test at the split — each index below the least length
    /// of the arrays it indexes there. The unchecked copy starts with those (array, index)
    /// pairs marked as checked ([`Tr::object_data`]): they are the accesses from the split on
    /// that run before either register is written again, so the test covers them. When it
    /// fails, the checked copy runs and raises any error at its own instruction, after
    /// whatever ran before it, as always.
    ///
    /// Returns (split pc, end pc, pairs), or `None` when that would not save checks.
    fn version_point(&self, start: usize) -> Option<Split> {
        let f = self.f;
        let end = (start + 1..f.code.len())
            .find(|&pc| self.blocks[pc].is_some())
            .unwrap_or(f.code.len());
        let mut accesses = Vec::new();
        for pc in start..end {
            let i = f.code[pc];
            let Some((arr, idx)) = loops::element_operands(&i) else {
                continue;
            };
            if loops::object_operand(f, i.op, i.a, i.b).is_some()
                && self.hoisted_view(pc as u32, arr).is_some()
            {
                accesses.push((pc, arr, idx));
            }
        }
        let written = |from: usize, to: usize, r: u16| {
            f.code[from..to]
                .iter()
                .rposition(|w| loops::writes(w, r))
                .map(|k| from + k)
        };
        // An index computed in the block by one pure, total instruction from other registers
        // the block has not written before it, into a register nothing reads before it, can
        // be computed early, at the block's start (and again in place: same value).
        let early_def = |pc: usize, idx: u16| -> Option<usize> {
            let d = written(start, pc, idx)?;
            let i = f.code[d];
            let ops = i.op.operands();
            let srcs = [(ops[0], i.a), (ops[1], i.b), (ops[2], i.c)];
            // (Not reading its own result, `j = j + 1`: done twice, early and in place, that
            // would add twice.)
            let inputs_fresh = srcs
                .iter()
                .filter(|(o, _)| matches!(o, Operand::Src(_)))
                .all(|&(_, r)| r != idx && written(start, d, r).is_none());
            let unread = f.code[start..d].iter().all(|w| !reads(w, idx));
            let once = written(start, d, idx).is_none();
            (pure_total(self.s.module, i) && inputs_fresh && unread && once).then_some(d)
        };
        let mut early = Vec::new();
        let all_early = accesses.iter().all(|&(pc, arr, idx)| {
            if written(start, pc, arr).is_some() {
                return false;
            }
            match written(start, pc, idx) {
                None => true,
                Some(_) => early_def(pc, idx).map(|d| early.push(d)).is_some(),
            }
        });
        if !all_early {
            early.clear();
        }
        early.sort_unstable();
        early.dedup();
        let at = if all_early {
            start
        } else {
            accesses
                .iter()
                .filter_map(|&(pc, arr, idx)| {
                    let w = written(start, pc, arr).max(written(start, pc, idx))?;
                    Some(w + 1)
                })
                .max()
                .unwrap_or(start)
        };
        let mut pairs: Vec<(u16, u16)> = Vec::new();
        for &(pc, arr, idx) in accesses.iter().filter(|&&(pc, ..)| pc >= at) {
            let rewritten = |r| {
                f.code[at..pc]
                    .iter()
                    .enumerate()
                    .any(|(k, w)| loops::writes(w, r) && !early.contains(&(at + k)))
            };
            if !rewritten(arr) && !rewritten(idx) && !pairs.contains(&(arr, idx)) {
                pairs.push((arr, idx));
            }
        }
        let mut indices: Vec<u16> = pairs.iter().map(|&(_, x)| x).collect();
        indices.sort_unstable();
        indices.dedup();
        let worth = pairs.len() >= 2 && indices.len() < pairs.len();
        (worth || self.promoted_access_in(at, end)).then_some((at, end, pairs, early))
    }

    /// Emits the test at `at` and the unchecked copy of `at..end` (see
    /// [`Tr::version_point`]); returns in the checked copy's block.
    fn versioned(
        &mut self,
        at: usize,
        end: usize,
        pairs: Vec<(u16, u16)>,
        early: &[usize],
    ) -> Result<(), JitError> {
        let f = self.f;
        for &d in early {
            self.instr(d as u32, f.code[d])?;
        }
        // (The elements a promoted loop holds in variables and its counted accesses need no
        // test: its preheader found them inside their arrays, `active`.)
        let covered = pairs.clone();
        let pairs: Vec<(u16, u16)> = pairs
            .into_iter()
            .filter(|&(arr, x)| {
                !self.promoted_candidate(at as u32, arr, x)
                    && !self.promoted_counted(at as u32, arr, x)
            })
            .collect();
        // index < the least length of the arrays its loop looked up (computed in the
        // preheader), for each index register and loop.
        let mut tests: Vec<(u16, Variable)> = Vec::new();
        for &(arr, x) in &pairs {
            let Some(least) = self.hoisted_least(at as u32, arr) else {
                return Ok(());
            };
            if !tests.contains(&(x, least)) {
                tests.push((x, least));
            }
        }
        // In a promoted loop, the unchecked copy also uses the elements' variables.
        let kept = |pc: usize, r: u16| {
            !f.code[at..pc]
                .iter()
                .enumerate()
                .any(|(k, w)| loops::writes(w, r) && !early.contains(&(at + k)))
        };
        let fast = self.promotion_test(at, end, kept);
        let mut gate = fast.as_ref().map(|t| t.active);
        let apart = fast.as_ref().and_then(|t| t.apart_ok);
        let mut ok = None;
        for (x, least) in tests {
            let index = self.get(x);
            let mut least = self.b.use_var(least);
            if let Some(active) = gate.take() {
                // A promoted loop's `active` as a length of 0 when false: one compare less
                // per iteration (the select is loop-invariant, and hoisted).
                let zero = self.b.ins().iconst(I64, 0);
                least = self.b.ins().select(active, least, zero);
            }
            let fits = self.b.ins().icmp(IntCC::UnsignedLessThan, index, least);
            ok = Some(match ok {
                Some(o) => self.b.ins().band(o, fits),
                None => fits,
            });
        }
        for held in gate.into_iter().chain(apart) {
            ok = Some(match ok {
                Some(o) => self.b.ins().band(o, held),
                None => held,
            });
        }
        let Some(ok) = ok else {
            return Ok(());
        };
        let unchecked = self.b.create_block();
        let checked = self.b.create_block();
        self.b.ins().brif(ok, unchecked, &[], checked, &[]);
        self.b.switch_to_block(unchecked);
        if let Some(t) = fast {
            self.fast = Some(t.promoted);
            self.apart = t.apart;
        }
        let before = self.checked.clone();
        let seen = self.seen.clone();
        self.checked.extend(covered);
        let mut terminated = false;
        for pc in at..end {
            let ins = f.code[pc];
            terminated = self.instr(pc as u32, ins)?;
            if !early.contains(&pc) {
                // (An early computation writes the value the test saw.)
                self.checked
                    .retain(|&(a, x)| !loops::writes(&ins, a) && !loops::writes(&ins, x));
                self.apart
                    .retain(|&(a, x)| !loops::writes(&ins, a) && !loops::writes(&ins, x));
            }
            self.forget_views(pc, &ins);
        }
        if !terminated {
            let next = self.branch_block(end as u32 - 1, end as u32)?;
            let next = self.exit_edge(end as u32 - 1, end as u32, next);
            self.b.ins().jump(next, &[]);
        }
        self.fast = None;
        self.apart.clear();
        self.checked = before;
        // (The unchecked copy's lookups do not dominate the checked copy.)
        self.seen = seen;
        self.b.switch_to_block(checked);
        Ok(())
    }
}

/// Where a block splits into two versions, where it ends, and the (array, index) register
/// pairs the unchecked version takes as checked (see [`Tr::version_point`]).
/// With the pcs of index computations made early (see [`Tr::version_point`]).
type Split = (usize, usize, Vec<(u16, u16)>, Vec<usize>);

/// Whether instruction `i` may read register `r` (a `Src` operand, or a `Special` one).
fn reads(i: &Instr, r: u16) -> bool {
    let ops = i.op.operands();
    [(ops[0], i.a), (ops[1], i.b), (ops[2], i.c)]
        .iter()
        .any(|&(o, x)| matches!(o, Operand::Src(_) | Operand::Special) && x == r)
}

/// Which pcs start a block: pc 0, jump targets, and the instruction after a branch or a
/// terminator.
pub(crate) fn leaders(f: &Function) -> Vec<bool> {
    let n = f.code.len();
    let mut leader = vec![false; n];
    if n > 0 {
        leader[0] = true;
    }
    for (pc, ins) in f.code.iter().enumerate() {
        if ins.op.is_branch() {
            if let Some(l) = leader.get_mut(ins.bc() as usize) {
                *l = true;
            }
        }
        if ins.op.is_branch() || ins.op.is_terminator() {
            if let Some(l) = leader.get_mut(pc + 1) {
                *l = true;
            }
        }
    }
    leader
}

/// The translator's state for one function.
struct Tr<'a, 'b> {
    s: &'a Setup<'a>,
    f: &'a Function,
    b: FunctionBuilder<'b>,
    kinds: Vec<Kind>,
    vars: Vec<Variable>,
    /// Remaining fuel, when compiled with fuel.
    fuel_var: Option<Variable>,
    ctx: Value,
    /// The window's offset in the register stack, in bytes and in cells. The offset never
    /// changes while the frame lives; the stack itself may move (any call or hook may grow
    /// it), so the window's address is recomputed from `stack_base` at each use.
    regs_off: Value,
    regs_off_cells: Value,
    /// This frame's depth (the caller's plus one), passed on to callees: a variable, as
    /// each pass of a tail-call loop is one level deeper ([`crate::tail`]).
    depth: Variable,
    /// The self-call turned into a jump back to the start, if any ([`crate::tail`]).
    tail: Option<TailLoop>,
    /// The ownership bit of the last call's result (`takeown`).
    own_var: Variable,
    statics: Value,
    consts: Value,
    /// The block of each leader pc.
    blocks: Vec<Option<Block>>,
    /// The shared error exit (params: status `i32`, pc `i32`).
    fault: Block,
    sigs: HashMap<(Vec<types::Type>, Vec<types::Type>), SigRef>,
    /// Memory flags of the inline object accesses (see [`ObjectMem`]).
    mem: ObjectMem,
    /// Loops whose object lookups run once in a preheader (see [`crate::loops`]), each with
    /// its preheader block and, per hoisted register, the data-address and length variables.
    hoisted: Vec<Hoist>,
    /// Cold blocks that call an access's hook to raise its error, filled once every other
    /// block is (they only use values defined before their branch).
    deferred: Vec<Deferred>,
    /// Kernel state when translating a kernel for the CPU backend (see [`device`]).
    dev: Option<device::DevState>,
    /// (array register, index register) pairs whose bounds check passed earlier in the
    /// current bytecode block, through a hoisted view (see [`Tr::object_data`]).
    checked: Vec<(u16, u16)>,
    /// Objects looked up earlier in the current bytecode block outside hoisting loops (host
    /// code only), reused by later accesses (see [`Tr::object_data`]).
    seen: Vec<SeenView>,
    /// Per pc, whether its instruction may release an object ([`loops::free_points`]): it
    /// ends every [`SeenView`].
    free_at: Vec<bool>,
    /// The calls inlined into this function's code (see [`crate::inline`]).
    sites: Vec<inline::Site>,
    /// Loops whose invariant elements live in variables (see [`crate::promote`]).
    promoted: Vec<promote::Promoted>,
    /// The promoted loop whose block's unchecked copy is being translated: its test found
    /// the elements in their variables ([`Tr::versioned`]).
    fast: Option<usize>,
    /// (array, index) accesses of that copy its test found apart from the candidates of
    /// their array.
    apart: Vec<(u16, u16)>,
    /// Exits of promoted loops still to be filled: (block, loop, target).
    exits: Vec<(Block, usize, Block)>,
}

/// An object that an access looked up earlier in the current bytecode block: its data address
/// and (arrays) length stay valid until the register is written or an instruction may release
/// an object ([`loops::free_points`]); and the greatest constant index already checked against it.
#[derive(Clone, Copy)]
struct SeenView {
    reg: u16,
    kind: u32,
    data: Value,
    len: Option<Value>,
    max_checked: Option<u64>,
}

/// A hoisting loop, its preheader block, per hoisted register (in the loop's order) the
/// variables holding the object's data address and length, and per strength-reduced
/// multiplication the variable holding its product; last, the least length of the arrays
/// its preheader looked up (see [`Tr::versioned`]).
type Hoist = (
    HoistedLoop,
    Block,
    Vec<(Variable, Variable)>,
    Vec<Variable>,
    Variable,
);

/// A tail-call loop ([`crate::tail`]): the call, the accumulator of its fold and the stack
/// slot holding the depth of the frame's first pass (the passes since are the frames it
/// stands for; only the error exit needs it, so it is not kept in a register).
struct TailLoop {
    call: TailCall,
    acc: Option<Variable>,
    first_depth: StackSlot,
}

/// A cold error exit still to be filled: the hook call that raises the error of the access
/// at `pc`, then the function's error exit.
struct Deferred {
    block: Block,
    pc: u32,
    hook: usize,
    params: Vec<types::Type>,
    args: Vec<Value>,
}

/// The alias regions of inline object access. Cranelift's alias analysis may then reuse a
/// view-table load across stores to array elements and fields (the table only changes inside
/// hooks, which are calls: every call ends every region), and an element load across field
/// stores. Every other store (no region) still ends them all.
struct ObjectMem {
    /// `JitContext::views`, the table's location and its entries: never stored by JIT code.
    views: MemFlagsData,
    /// Array elements.
    elems: MemFlagsData,
    /// Instance fields.
    fields: MemFlagsData,
}

impl ObjectMem {
    fn new(b: &mut FunctionBuilder<'_>) -> ObjectMem {
        let mut region = |user_id, description: &'static str| {
            let r = b.func.dfg.alias_regions.insert(AliasRegionData {
                user_id,
                description: description.into(),
            });
            MF.with_alias_region(Some(r))
        };
        ObjectMem {
            views: region(1, "object views"),
            elems: region(2, "array elements"),
            fields: region(3, "instance fields"),
        }
    }
}

impl<'a, 'b> Tr<'a, 'b> {
    /// Creates the blocks and variables and emits the prologue: depth check, window offset,
    /// parameter loads, fuel for the call.
    fn prologue(
        mut b: FunctionBuilder<'b>,
        s: &'a Setup<'a>,
        f: &'a Function,
    ) -> (Tr<'a, 'b>, Inst) {
        let leader = leaders(f);
        let uses = |ops: &[Op]| f.code.iter().any(|i| ops.contains(&i.op));
        let uses_statics = uses(&[Op::GetStatic, Op::SetStatic]);
        let uses_consts = f.code.iter().any(|i| {
            i.op == Op::LoadK && matches!(s.module.consts.get(i.bc() as usize), Some(Const::Str(_)))
        });

        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let params: Vec<Value> = b.block_params(entry).to_vec();
        let (ctx, regs_off, caller_depth) = (params[0], params[1], params[2]);

        // The depth limit: failing here, before this frame counts, puts the caller's call
        // site on top of the trace, as in the interpreter.
        let max = b.ins().load(I64, MF, ctx, off::MAX_DEPTH);
        let full = b
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, caller_depth, max);
        let body = b.create_block();
        let over = b.create_block();
        b.set_cold_block(over);
        b.ins().brif(full, over, &[], body, &[]);
        b.switch_to_block(over);
        let st = b.ins().iconst(I64, Status::Stack as i64);
        let zero = b.ins().iconst(I64, 0);
        b.ins().return_(&[st, zero]);

        b.switch_to_block(body);
        let first_depth = b.ins().iadd_imm_s(caller_depth, 1);
        let depth = b.declare_var(I64);
        b.def_var(depth, first_depth);
        let regs_off_cells = b.ins().ushr_imm_u(regs_off, 3);
        let statics = if uses_statics {
            b.ins().load(I64, MF, ctx, off::STATICS)
        } else {
            b.ins().iconst(I64, 0)
        };
        let consts = if uses_consts {
            b.ins().load(I64, MF, ctx, off::CONSTS)
        } else {
            b.ins().iconst(I64, 0)
        };

        let kinds: Vec<Kind> = f.regs.iter().map(|&t| kind_of(t)).collect();
        let vars = declare_vars(&mut b, &kinds);
        let own_var = b.declare_var(I64);
        let fuel_var = if s.fuel {
            let v = b.declare_var(I64);
            let fuel = b.ins().load(I64, MF, ctx, off::FUEL);
            b.def_var(v, fuel);
            Some(v)
        } else {
            None
        };
        let (fault, blocks) = fault_and_blocks(&mut b, &leader);
        // (Not with fuel: a call is a unit of it.)
        let tail = tail::tail_call(f, s.func, |pc| leader.get(pc).copied().unwrap_or(true))
            .filter(|_| !s.fuel)
            .map(|call| {
                let acc = call.fold.map(|fold| {
                    let acc = b.declare_var(I64);
                    let identity = b.ins().iconst(I64, fold.op.identity());
                    b.def_var(acc, identity);
                    acc
                });
                let slot = StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 3);
                let first = b.create_sized_stack_slot(slot);
                b.ins().stack_store(I64, first_depth, first, 0);
                TailLoop {
                    call,
                    acc,
                    first_depth: first,
                }
            });

        let mem = ObjectMem::new(&mut b);
        // Loops with views to hoist or products to keep (views only with inline objects).
        let free_at = loops::free_points(f, &|g| !pure_function(s.module, usize::from(g)));
        let hoisted: Vec<Hoist> = loops::hoisted_loops(f, &free_at)
            .into_iter()
            .map(|mut l| {
                if !s.inline_objects {
                    l.regs.clear();
                }
                let pre = b.create_block();
                let vars = l
                    .regs
                    .iter()
                    .map(|_| (b.declare_var(I64), b.declare_var(I64)))
                    .collect();
                let products = l.reduced.iter().map(|_| b.declare_var(I64)).collect();
                let least = b.declare_var(I64);
                (l, pre, vars, products, least)
            })
            .collect();
        let mut tr = Tr {
            s,
            f,
            b,
            kinds,
            vars,
            fuel_var,
            ctx,
            regs_off,
            regs_off_cells,
            depth,
            tail,
            own_var,
            statics,
            consts,
            blocks,
            fault,
            sigs: HashMap::new(),
            mem,
            hoisted,
            deferred: Vec::new(),
            dev: None,
            checked: Vec::new(),
            seen: Vec::new(),
            free_at,
            sites: Vec::new(),
            promoted: Vec::new(),
            fast: None,
            apart: Vec::new(),
            exits: Vec::new(),
        };
        let check = tr.native_stack_check(&params[3..]);
        // A frame with String registers uses its window: make sure it exists (callers
        // reserve nothing for native callees).
        if tr.kinds.contains(&Kind::Mem) || f.code.iter().any(|i| xpu_host(i.op)) {
            let n = tr.f.regs.len() as i64;
            tr.ensure_room(0, n);
        }
        // Parameters arrive in machine registers (String ones in the window).
        let mut next = params[3..].iter();
        for p in 0..f.params {
            if tr.kinds[usize::from(p)] != Kind::Mem {
                if let Some(&v) = next.next() {
                    tr.set(p, v);
                }
            }
        }
        tr.consume_fuel(0);
        (tr, check)
    }

    /// Ends the prologue: on to pc 0 or, in code with entries at loop headers
    /// ([`Setup::osr`]), first to the entry the context asks for ([`crate::osr`]).
    fn start(&mut self) -> Result<(), JitError> {
        let Some(first) = self.blocks.first().copied().flatten() else {
            return Ok(());
        };
        let own = &self.s.module.functions[self.s.func as usize];
        let entries = if self.s.osr && !self.s.fuel {
            osr::entries(self.s.module, own)
        } else {
            Vec::new()
        };
        if entries.is_empty() {
            self.b.ins().jump(first, &[]);
            return Ok(());
        }
        let ctx = self.ctx;
        let want = self.b.ins().load(I64, MF, ctx, off::OSR_PC);
        let dispatch = self.b.create_block();
        self.b.set_cold_block(dispatch);
        self.b.ins().brif(want, dispatch, &[], first, &[]);
        self.b.switch_to_block(dispatch);
        // Taken: calls made from here on are plain entries.
        let zero = self.b.ins().iconst(I64, 0);
        self.b.ins().store(MF, zero, ctx, off::OSR_PC);
        for e in &entries {
            let here = self.b.create_block();
            let next = self.b.create_block();
            self.b.set_cold_block(here);
            self.b.set_cold_block(next);
            let is = self
                .b
                .ins()
                .icmp_imm_s(IntCC::Equal, want, i64::from(e.pc) + 1);
            self.b.ins().brif(is, here, &[], next, &[]);
            self.b.switch_to_block(here);
            self.osr_entry(self.combined_pc(e.pc), &e.live)?;
            self.b.switch_to_block(next);
        }
        // A header this code has no entry for: an embedder bug (no pending error: the
        // embedder reports an internal error).
        let st = self.b.ins().iconst(I64, Status::Error as i64);
        self.b.ins().return_(&[st, zero]);
        Ok(())
    }

    /// The entry at loop header `header` (a pc of the code being translated): the live
    /// registers from the window, then the lookups of the hoisting loops around the header
    /// (outermost first: an inner preheader relies on what an outer one looked up), then the
    /// header, through its own preheader if it has one.
    fn osr_entry(&mut self, header: u32, live: &[u16]) -> Result<(), JitError> {
        let regs = self.regs();
        for &r in live {
            if self.kind(r) != Kind::Mem {
                let cell = self.b.ins().load(I64, MF, regs, 8 * i32::from(r));
                self.set_cell(r, cell);
            }
        }
        let mut around: Vec<usize> = (0..self.hoisted.len())
            .filter(|&k| {
                let l = &self.hoisted[k].0;
                l.contains(header) && l.header != header
            })
            .collect();
        around
            .sort_by_key(|&k| std::cmp::Reverse(self.hoisted[k].0.end - self.hoisted[k].0.header));
        for k in around {
            self.hoist_lookups(k)?;
        }
        let target = self.branch_block(u32::MAX, header)?;
        self.b.ins().jump(target, &[]);
        Ok(())
    }

    /// The pc in the code being translated of pc `pc` of the function's own code (they
    /// differ after the spliced calls before it: [`crate::inline`]).
    fn combined_pc(&self, pc: u32) -> u32 {
        let grown: u32 = self
            .sites
            .iter()
            .filter(|s| s.call_pc < pc)
            .map(|s| s.end - s.start - 1)
            .sum();
        pc + grown
    }

    /// A native call needs native stack: below the embedder's limit
    /// (`JitContext::native_stack_limit`) the function runs itself in the interpreter
    /// instead, whose frames are on the heap. Checked here rather than at each call site, so
    /// that call sites stay a plain call. `params` are the body's parameters after the fixed
    /// three. The interpreter needs the window, holding the arguments: it is reserved, the
    /// arguments stored, and the `call_interp` hook's status, ownership bit and result are
    /// returned as this function's, with no trace entry (the caller pushes its call site, as
    /// for any failed call). Runs before the call's unit of fuel: the interpreter counts it.
    fn native_stack_check(&mut self, params: &[Value]) -> Inst {
        let ctx = self.ctx;
        let hooks = *self.s.hooks;
        let sp = self.b.ins().get_stack_pointer(I64);
        let limit = self.b.ins().load(I64, MF, ctx, off::NATIVE_LIMIT);
        let low = self.b.ins().icmp(IntCC::UnsignedLessThan, sp, limit);
        let native = self.b.create_block();
        let interp = self.b.create_block();
        self.b.set_cold_block(interp);
        let check = self.b.ins().brif(low, interp, &[], native, &[]);

        self.b.switch_to_block(interp);
        // The arguments wait in a native stack slot while the window is made: live across
        // the `grow_stack` call, they would be spilled for the whole function (float ones
        // even inside its loops: every XMM register is caller-saved).
        let cells_of: Vec<(u16, Value)> = (0..self.f.params)
            .filter(|&p| self.kind(p) != Kind::Mem)
            .zip(params.iter().copied())
            .collect();
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            8 * cells_of.len().max(1) as u32,
            3,
        ));
        for (k, &(p, v)) in cells_of.iter().enumerate() {
            let cell = self.cell_of(self.kind(p), v);
            self.b.ins().stack_store(I64, cell, slot, 8 * k as i32);
        }
        let cells = self.f.regs.len() as i64;
        let need = self.b.ins().iadd_imm_s(self.regs_off_cells, cells);
        let len = self.b.ins().load(I64, MF, ctx, off::STACK_LEN);
        let short = self.b.ins().icmp(IntCC::UnsignedGreaterThan, need, len);
        let grow = self.b.create_block();
        let room = self.b.create_block();
        self.b.ins().brif(short, grow, &[], room, &[]);
        self.b.switch_to_block(grow);
        let st = self.call1(hooks.grow_stack as usize, &[I64, I64], I32, &[ctx, need]);
        let failed = self.b.create_block();
        self.b.ins().brif(st, failed, &[], room, &[]);
        self.b.switch_to_block(failed);
        let st = self.b.ins().uextend(I64, st);
        let zero = self.b.ins().iconst(I64, 0);
        self.b.ins().return_(&[st, zero]);

        self.b.switch_to_block(room);
        let regs = self.regs();
        for (k, &(p, _)) in cells_of.iter().enumerate() {
            let cell = self.b.ins().stack_load(I64, I64, slot, 8 * k as i32);
            self.b.ins().store(MF, cell, regs, 8 * i32::from(p));
        }
        let depth = self.depth();
        let caller_depth = self.b.ins().iadd_imm_s(depth, -1);
        let (st, v) = self.run_interpreted(self.s.func, regs, caller_depth);
        self.b.ins().return_(&[st, v]);

        self.b.switch_to_block(native);
        check
    }

    /// Fills the shared error exit.
    fn fault_block(&mut self) {
        let fault = self.fault;
        self.b.switch_to_block(fault);
        let st = self.b.block_params(fault)[0];
        let pc = self.b.block_params(fault)[1];
        let push = helpers::trace_push as *const () as usize;
        let func = self.s.func;
        if self.sites.is_empty() {
            self.push_entry(push, func, pc);
        } else {
            // An inlined callee's error: its entry, then its call site's.
            let tail = self.b.create_block();
            let own = self.b.create_block();
            let mut next = self.b.create_block();
            let site = self.b.ins().ushr_imm_u(pc, INLINED_SITE_SHIFT);
            let inner = self.b.ins().band_imm_s(pc, (1 << INLINED_SITE_SHIFT) - 1);
            let inlined = self.b.ins().band_imm_s(pc, INLINED_PC);
            self.b.ins().brif(inlined, next, &[], own, &[]);
            self.b.switch_to_block(own);
            self.push_entry(push, func, pc);
            self.b.ins().jump(tail, &[]);
            for (k, s) in self.sites.clone().into_iter().enumerate() {
                self.b.switch_to_block(next);
                let here = self.b.create_block();
                next = self.b.create_block();
                let tag = (INLINED_PC >> INLINED_SITE_SHIFT) | k as i64;
                let is = self.b.ins().icmp_imm_s(IntCC::Equal, site, tag);
                self.b.ins().brif(is, here, &[], next, &[]);
                self.b.switch_to_block(here);
                self.push_entry(push, s.callee, inner);
                let call = self.b.ins().iconst(I32, i64::from(s.call_pc));
                self.push_entry(push, func, call);
                self.b.ins().jump(tail, &[]);
            }
            // (No other word reaches here.)
            self.b.switch_to_block(next);
            self.b.ins().jump(tail, &[]);
            self.b.switch_to_block(tail);
        }
        if let Some((call_pc, first)) = self.tail.as_ref().map(|t| (t.call.pc, t.first_depth)) {
            // The frames a tail-call loop stands for, each waiting at its call.
            let depth = self.depth();
            let first = self.b.ins().stack_load(I64, I64, first, 0);
            let elided = self.b.ins().isub(depth, first);
            let word = self.pc_word(call_pc);
            let pc = self.b.ins().iconst(I32, word);
            let func = self.b.ins().iconst(I32, i64::from(func));
            let repeated = helpers::trace_push_repeated as *const () as usize;
            let ctx = self.ctx;
            self.call_addr(repeated, &[I64, I32, I32, I64], &[ctx, func, pc, elided]);
        }
        self.epilogue();
        let st = self.b.ins().uextend(I64, st);
        // The result cell is meaningless after an error, except `sys.exit`'s status, which
        // is in `ret` already: hand it back unchanged (the entry wrapper stores it again).
        let ctx = self.ctx;
        let ret = self.b.ins().load(I64, MF, ctx, off::RET);
        self.b.ins().return_(&[st, ret]);
    }

    /// Pushes the trace entry (function `func`, pc `pc`).
    fn push_entry(&mut self, push: usize, func: u32, pc: Value) {
        let func = self.b.ins().iconst(I32, i64::from(func));
        let ctx = self.ctx;
        self.call_addr(push, &[I64, I32, I32], &[ctx, func, pc]);
    }

    /// Writes the fuel back before any return.
    fn epilogue(&mut self) {
        let ctx = self.ctx;
        if let Some(v) = self.fuel_var {
            let fuel = self.b.use_var(v);
            self.b.ins().store(MF, fuel, ctx, off::FUEL);
        }
    }

    // ---- register access -------------------------------------------------------------

    fn kind(&self, r: u16) -> Kind {
        self.kinds[usize::from(r)]
    }

    /// The Cranelift type of register `r`'s value (`get`/`set`).
    fn var_type(&self, r: u16) -> types::Type {
        self.kind(r).ty()
    }

    /// The window's current address.
    fn regs(&mut self) -> Value {
        let ctx = self.ctx;
        let base = self.b.ins().load(I64, MF, ctx, off::STACK_BASE);
        self.b.ins().iadd(base, self.regs_off)
    }

    /// Makes the stack at least `regs_off + cells` cells long, through the `grow_stack`
    /// hook (failing at `pc` if it fails).
    fn ensure_room(&mut self, pc: u32, cells: i64) {
        let ctx = self.ctx;
        let hooks = *self.s.hooks;
        let need = self.b.ins().iadd_imm_s(self.regs_off_cells, cells);
        let len = self.b.ins().load(I64, MF, ctx, off::STACK_LEN);
        let short = self.b.ins().icmp(IntCC::UnsignedGreaterThan, need, len);
        let grow = self.b.create_block();
        let room = self.b.create_block();
        self.b.set_cold_block(grow);
        self.b.ins().brif(short, grow, &[], room, &[]);
        self.b.switch_to_block(grow);
        self.hook(pc, hooks.grow_stack as usize, &[I64], &[need]);
        self.b.ins().jump(room, &[]);
        self.b.switch_to_block(room);
    }

    /// Register `r` in its variable's type (`i64` for `Mem` registers, loaded).
    fn get(&mut self, r: u16) -> Value {
        match self.kind(r) {
            Kind::Mem => {
                let regs = self.regs();
                self.b.ins().load(I64, MF, regs, 8 * i32::from(r))
            }
            _ => self.b.use_var(self.vars[usize::from(r)]),
        }
    }

    /// Writes register `r` (a value of its variable's type).
    fn set(&mut self, r: u16, v: Value) {
        match self.kind(r) {
            Kind::Mem => {
                let regs = self.regs();
                self.b.ins().store(MF, v, regs, 8 * i32::from(r));
            }
            _ => self.b.def_var(self.vars[usize::from(r)], v),
        }
    }

    /// Register `r` as its canonical 64-bit cell.
    fn get_cell(&mut self, r: u16) -> Value {
        let v = self.get(r);
        self.cell_of(self.kind(r), v)
    }

    /// Writes the canonical cell `cell` to register `r`.
    fn set_cell(&mut self, r: u16, cell: Value) {
        let v = self.value_of(self.kind(r), cell);
        self.set(r, v);
    }

    fn cell_of(&mut self, k: Kind, v: Value) -> Value {
        match k {
            Kind::F64 => self.b.ins().bitcast(I64, MemFlagsData::new(), v),
            Kind::F32 => {
                let bits = self.b.ins().bitcast(I32, MemFlagsData::new(), v);
                self.b.ins().uextend(I64, bits)
            }
            Kind::Int | Kind::Mem => v,
        }
    }

    fn value_of(&mut self, k: Kind, cell: Value) -> Value {
        match k {
            Kind::F64 => self.b.ins().bitcast(F64, MemFlagsData::new(), cell),
            Kind::F32 => {
                let bits = self.b.ins().ireduce(I32, cell);
                self.b.ins().bitcast(F32, MemFlagsData::new(), bits)
            }
            Kind::Int | Kind::Mem => cell,
        }
    }

    /// Stores register `r` into the window (a no-op for `Mem` registers, already there).
    fn spill(&mut self, r: u16) {
        if self.kind(r) != Kind::Mem {
            let cell = self.get_cell(r);
            let regs = self.regs();
            self.b.ins().store(MF, cell, regs, 8 * i32::from(r));
        }
    }

    /// The integer constant `v` was computed from, if it is one.
    fn const_of(&self, v: Value) -> Option<i64> {
        let dfg = &self.b.func.dfg;
        let inst = dfg.value_def(v).inst()?;
        match dfg.insts[inst] {
            cranelift_codegen::ir::InstructionData::UnaryImm {
                opcode: cranelift_codegen::ir::Opcode::Iconst,
                imm,
            } => Some(imm.bits()),
            _ => None,
        }
    }

    // ---- control ------------------------------------------------------------------------

    fn block(&self, pc: u32) -> Result<Block, JitError> {
        self.blocks
            .get(pc as usize)
            .copied()
            .flatten()
            .ok_or_else(|| self.err(pc, format!("jump target {pc} is not a block")))
    }

    /// The block a branch (or fallthrough) from `pc` to `target` enters: the preheader of a
    /// hoisting loop whose header `target` is, when `pc` lies outside that loop, else the
    /// target's own block.
    fn branch_block(&self, pc: u32, target: u32) -> Result<Block, JitError> {
        for (l, pre, ..) in &self.hoisted {
            if l.header == target && !l.contains(pc) {
                return Ok(*pre);
            }
        }
        self.block(target)
    }

    /// Fills the preheader of the loop at `header` (its block `body`): each hoisted register
    /// looked up once (see [`crate::loops`]), then on to the header.
    fn preheader(&mut self, header: u32, body: Block) -> Result<(), JitError> {
        let Some(k) = self.hoisted.iter().position(|(l, ..)| l.header == header) else {
            return Ok(());
        };
        let pre = self.hoisted[k].1;
        self.b.switch_to_block(pre);
        self.hoist_lookups(k)?;
        self.b.ins().jump(body, &[]);
        Ok(())
    }

    /// What the preheader of hoisting loop `k` computes, into the current block: its
    /// registers' views and their least length, and its strength-reduced products.
    fn hoist_lookups(&mut self, k: usize) -> Result<(), JitError> {
        let (l, _, vars, products, least_var) = self.hoisted[k].clone();
        let header = l.header;
        let mut least = None;
        for (&(reg, kind), &(data_var, len_var)) in l.regs.iter().zip(&vars) {
            if self.hoisted_view(header, reg) != Some((data_var, len_var)) {
                // An enclosing loop's preheader looked it up already.
                continue;
            }
            let handle = match l.statics.iter().find(|&&(r, _)| r == reg) {
                // (The register itself is set later, in the loop.)
                Some(&(_, k)) => {
                    let st = self.statics;
                    self.b.ins().load(I64, MF, st, 8 * i32::from(k))
                }
                None => self.get(reg),
            };
            let (data, len) = self.speculative_lookup(handle, kind);
            self.b.def_var(data_var, data);
            self.b.def_var(len_var, len);
            if ObjectView::instance_kind(kind & !0x4000_0000) != Some(kind) {
                least = Some(match least {
                    Some(m) => self.b.ins().umin(m, len),
                    None => len,
                });
            }
        }
        let least = least.unwrap_or_else(|| self.b.ins().iconst(I64, 0));
        self.b.def_var(least_var, least);
        for (r, &p) in l.reduced.iter().zip(&products) {
            let (x, j) = (self.get(r.x), self.get(r.j));
            let v = self.b.ins().imul(x, j);
            self.b.def_var(p, v);
        }
        self.promotion_preheader(k)
    }

    /// The product variable standing for the strength-reduced `mul` at `pc`, if any (see
    /// [`loops::Reduced`]).
    fn reduced_product(&self, pc: u32) -> Option<Variable> {
        self.hoisted.iter().find_map(|(l, _, _, products, _)| {
            let k = l.reduced.iter().position(|r| r.mul == pc)?;
            Some(products[k])
        })
    }

    /// After the instruction at `pc`: if it is the `addi` of a strength reduction's
    /// induction variable, advance the product by `x * step`.
    fn advance_products(&mut self, pc: u32) {
        let mut steps = Vec::new();
        for (l, _, _, products, _) in &self.hoisted {
            for (r, &p) in l.reduced.iter().zip(products) {
                if r.inc == pc {
                    steps.push((r.x, r.step, p));
                }
            }
        }
        for (x, step, p) in steps {
            let x = self.get(x);
            let by = self.b.ins().imul_imm_s(x, step);
            let old = self.b.use_var(p);
            let v = self.b.ins().iadd(old, by);
            self.b.def_var(p, v);
        }
    }

    /// The hoisted (data, length) variables of `reg` at `pc`, from the outermost hoisting
    /// loop around `pc` that hoists it (its preheader dominates the loops inside it, which
    /// then need no lookup of their own).
    fn hoisted_view(&self, pc: u32, reg: u16) -> Option<(Variable, Variable)> {
        self.hoisted_entry(pc, reg)
            .map(|(e, k)| self.hoisted[e].2[k])
    }

    /// The least-length variable of the loop whose lookup [`Tr::hoisted_view`] uses.
    fn hoisted_least(&self, pc: u32, reg: u16) -> Option<Variable> {
        self.hoisted_entry(pc, reg).map(|(e, _)| self.hoisted[e].4)
    }

    /// (index in `hoisted`, index in its registers) of [`Tr::hoisted_view`]'s loop.
    fn hoisted_entry(&self, pc: u32, reg: u16) -> Option<(usize, usize)> {
        self.hoisted
            .iter()
            .enumerate()
            .filter(|(_, (l, ..))| l.contains(pc))
            .filter_map(|(e, (l, ..))| {
                let k = l.regs.iter().position(|&(r, _)| r == reg)?;
                Some((l.end - l.header, (e, k)))
            })
            .max_by_key(|&(size, _)| size)
            .map(|(_, v)| v)
    }

    fn err(&self, pc: u32, msg: String) -> JitError {
        JitError::new(Some(self.s.func), Some(pc), msg)
    }

    /// What the error exit gets for an error at `pc`: the caller's own pc, or for the code
    /// of an inlined call ([`crate::inline`]) the callee's pc tagged with the site, which
    /// [`Tr::fault_block`] turns into the callee's trace entry and the call site's.
    fn pc_word(&self, pc: u32) -> i64 {
        match inline::origin(&self.sites, pc) {
            (None, p) => i64::from(p),
            (Some(k), p) => INLINED_PC | (k as i64) << INLINED_SITE_SHIFT | i64::from(p),
        }
    }

    /// Register `r` as a hook names it in a message: in inlined code, the callee's own
    /// number (the trace's innermost entry is the callee's).
    fn reg_id(&mut self, pc: u32, r: u16) -> Value {
        let r = match inline::origin(&self.sites, pc) {
            (Some(k), _) => r.saturating_sub(self.sites[k].base),
            (None, _) => r,
        };
        self.i32c(u32::from(r))
    }

    /// `if cond != 0` → the error exit with `status` at `pc`; continues in a new block.
    fn fail_if(&mut self, cond: Value, status: Value, pc: u32) {
        // A lane of lockstep code leaves its group instead (the lanes finish one by one,
        // and the first in item order to fail reports it).
        if let Some(bail) = self.lockstep_bail(pc) {
            let cont = self.b.create_block();
            self.b.ins().brif(cond, bail, &[], cont, &[]);
            self.b.switch_to_block(cont);
            return;
        }
        let word = self.pc_word(pc);
        let fault = self.fault_target(pc);
        self.fail_at(cond, status, word, fault);
    }

    /// `if cond != 0` → error exit `fault` with `status` at trace word `word` (see
    /// [`Tr::pc_word`]); continues in a new block.
    fn fail_at(&mut self, cond: Value, status: Value, word: i64, fault: Block) {
        let cont = self.b.create_block();
        let pcv = self.b.ins().iconst(I32, word);
        self.b.ins().brif(
            cond,
            fault,
            &[BlockArg::Value(status), BlockArg::Value(pcv)],
            cont,
            &[],
        );
        self.b.switch_to_block(cont);
    }

    /// This frame's depth (the caller's plus one).
    fn depth(&mut self) -> Value {
        self.b.use_var(self.depth)
    }

    /// Whether a call made now would fail the callee's depth check.
    fn at_depth_limit(&mut self) -> Value {
        let ctx = self.ctx;
        let max = self.b.ins().load(I64, MF, ctx, off::MAX_DEPTH);
        let depth = self.depth();
        self.b
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, depth, max)
    }

    /// A call's depth limit, as the callee's prologue checks it: at the limit the call fails
    /// with `E-STACK` before its frame counts, at trace word `word` (the call site).
    fn depth_check(&mut self, word: i64, fault: Block) {
        let full = self.at_depth_limit();
        // Through a cold block of its own, so that the error exit's arguments are made
        // there, not on the way (in a tail-call loop this check runs at every pass).
        let cont = self.b.create_block();
        let failed = self.b.create_block();
        self.b.set_cold_block(failed);
        self.b.ins().brif(full, failed, &[], cont, &[]);
        self.b.switch_to_block(failed);
        let st = self.b.ins().iconst(I32, Status::Stack as i64);
        let pcv = self.b.ins().iconst(I32, word);
        let args = [BlockArg::Value(st), BlockArg::Value(pcv)];
        self.b.ins().jump(fault, &args);
        self.b.switch_to_block(cont);
    }

    /// Leaves with `status` (a constant) at `pc` if `cond` holds.
    fn fail_const_if(&mut self, cond: Value, status: Status, pc: u32) {
        let st = self.b.ins().iconst(I32, status as i64);
        self.fail_if(cond, st, pc);
    }

    /// Uses one unit of fuel (calls and backward jumps), failing at zero; first checks the
    /// interrupt flag (`JitContext::interrupt`), which another thread may set at any time,
    /// so it is loaded afresh at every check point.
    fn consume_fuel(&mut self, pc: u32) {
        if let Some(v) = self.fuel_var {
            let ctx = self.ctx;
            let flag_at = self.b.ins().load(I64, MF, ctx, off::INTERRUPT);
            // An atomic load: a plain one would be merged with the same load at the
            // function's entry (nothing in a loop stores to it), and never see the flag.
            let flag = self.b.ins().atomic_load(I8, MF, flag_at);
            self.fail_const_if(flag, Status::Interrupted, pc);
            let fuel = self.b.use_var(v);
            let empty = self
                .b
                .ins()
                .icmp_imm_s(IntCC::SignedLessThanOrEqual, fuel, 0);
            self.fail_const_if(empty, Status::Fuel, pc);
            let rest = self.b.ins().iadd_imm_s(fuel, -1);
            self.b.def_var(v, rest);
        }
    }

    /// The block a branch at `pc` to `target` should go to: the target itself, or for a
    /// backward branch under fuel accounting a new block that uses fuel first (filled by
    /// [`Tr::fill_edges`] after the branch is emitted).
    fn edge(&mut self, pc: u32, target: u32) -> Result<(Block, Option<Block>), JitError> {
        let t = self.branch_block(pc, target)?;
        let t = self.exit_edge(pc, target, t);
        if self.fuel_var.is_some() && target <= pc {
            let e = self.b.create_block();
            Ok((e, Some(e)))
        } else {
            Ok((t, None))
        }
    }

    fn fill_edge(&mut self, pc: u32, target: u32, edge: Option<Block>) -> Result<(), JitError> {
        if let Some(e) = edge {
            let t = self.block(target)?;
            self.b.switch_to_block(e);
            self.consume_fuel(pc);
            self.b.ins().jump(t, &[]);
        }
        Ok(())
    }

    // ---- calls to native code -----------------------------------------------------------

    fn sig(&mut self, params: &[types::Type], rets: &[types::Type]) -> SigRef {
        let key = (params.to_vec(), rets.to_vec());
        if let Some(&s) = self.sigs.get(&key) {
            return s;
        }
        let mut sig = Signature::new(self.s.call_conv);
        sig.params.extend(params.iter().map(|&t| AbiParam::new(t)));
        sig.returns.extend(rets.iter().map(|&t| AbiParam::new(t)));
        let r = self.b.import_signature(sig);
        self.sigs.insert(key, r);
        r
    }

    /// Calls the native function at `addr` (compiled in as an immediate) that returns
    /// nothing.
    fn call_addr(&mut self, addr: usize, params: &[types::Type], args: &[Value]) {
        let sig = self.sig(params, &[]);
        let callee = self.b.ins().iconst(I64, addr as i64);
        self.b.ins().call_indirect(sig, callee, args);
    }

    /// Calls the native function at `addr` that returns one value of type `ret`.
    fn call1(
        &mut self,
        addr: usize,
        params: &[types::Type],
        ret: types::Type,
        args: &[Value],
    ) -> Value {
        let sig = self.sig(params, &[ret]);
        let callee = self.b.ins().iconst(I64, addr as i64);
        let call = self.b.ins().call_indirect(sig, callee, args);
        // The signature has exactly one result.
        self.b.inst_results(call)[0]
    }

    /// Calls a hook `(ctx, args…) -> status` and leaves through the error exit on a nonzero
    /// status.
    fn hook(&mut self, pc: u32, addr: usize, params: &[types::Type], args: &[Value]) {
        let mut p = vec![I64];
        p.extend_from_slice(params);
        let mut a = vec![self.ctx];
        a.extend_from_slice(args);
        let st = self.call1(addr, &p, I32, &a);
        self.fail_if(st, st, pc);
    }

    /// The result cell a hook left in the context.
    fn ret_cell(&mut self) -> Value {
        let ctx = self.ctx;
        self.b.ins().load(I64, MF, ctx, off::RET)
    }

    fn i32c(&mut self, v: u32) -> Value {
        self.b.ins().iconst(I32, i64::from(v))
    }

    fn f64_helper(&mut self, addr: usize, args: &[Value]) -> Value {
        let params = vec![F64; args.len()];
        self.call1(addr, &params, F64, args)
    }

    fn f32_helper(&mut self, addr: usize, args: &[Value]) -> Value {
        let params = vec![F32; args.len()];
        self.call1(addr, &params, F32, args)
    }

    // ---- integer helpers ----------------------------------------------------------------

    /// Re-canonicalises the 64-bit `v` to `s` (sign- or zero-extends the low bits).
    fn canon(&mut self, s: Scalar, v: Value) -> Value {
        let narrow = |tr: &mut Self, ty| {
            let t = tr.b.ins().ireduce(ty, v);
            tr.b.ins().sextend(I64, t)
        };
        match s {
            Scalar::I8 => narrow(self, I8),
            Scalar::I16 => narrow(self, I16),
            Scalar::I32 => narrow(self, I32),
            Scalar::U8 | Scalar::Bool => self.b.ins().band_imm_s(v, 0xff),
            Scalar::U16 => self.b.ins().band_imm_s(v, 0xffff),
            // A 32-bit move zero-extends on x86-64: no 64-bit mask constant to load.
            Scalar::U32 | Scalar::Char => {
                let t = self.b.ins().ireduce(I32, v);
                self.b.ins().uextend(I64, t)
            }
            _ => v,
        }
    }

    fn mask_of(s: Scalar) -> i64 {
        match s.bits() {
            64 => -1,
            w => (1i64 << w) - 1,
        }
    }

    fn bool_of(&mut self, c: Value) -> Value {
        self.b.ins().uextend(I64, c)
    }

    /// Integer division or remainder with the interpreter's checks: `E-DIVZERO` for a zero
    /// divisor; for signed types `E-OVERFLOW` on `MIN / -1` and `MIN % -1 == 0`. A divisor
    /// of −1 never reaches the hardware divide (it would trap on `i64::MIN`).
    fn divrem(&mut self, pc: u32, s: Scalar, rem: bool, x: Value, y: Value) -> Value {
        let signed = s.is_signed();
        let op = |tr: &mut Self, x, y| match (signed, rem) {
            (true, false) => tr.b.ins().sdiv(x, y),
            (true, true) => tr.b.ins().srem(x, y),
            (false, false) => tr.b.ins().udiv(x, y),
            (false, true) => tr.b.ins().urem(x, y),
        };
        match self.const_of(y) {
            // A known divisor that cannot fault: no checks (Cranelift strength-reduces it).
            Some(k) if k != 0 && !(signed && k == -1) => return op(self, x, y),
            _ => {}
        }
        if !signed {
            let zero = self.b.ins().icmp_imm_s(IntCC::Equal, y, 0);
            self.fail_const_if(zero, Status::DivZero, pc);
            return op(self, x, y);
        }
        // y ∈ {-1, 0} ⇔ y + 1 ≤ 1 (unsigned): one compare on the fast path.
        let y1 = self.b.ins().iadd_imm_s(y, 1);
        let special = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedLessThanOrEqual, y1, 1);
        let fast = self.b.create_block();
        let slow = self.b.create_block();
        let join = self.b.create_block();
        let res = self.b.append_block_param(join, I64);
        self.b.set_cold_block(slow);
        self.b.ins().brif(special, slow, &[], fast, &[]);

        self.b.switch_to_block(fast);
        let q = op(self, x, y);
        self.b.ins().jump(join, &[BlockArg::Value(q)]);

        self.b.switch_to_block(slow);
        let zero = self.b.ins().icmp_imm_s(IntCC::Equal, y, 0);
        self.fail_const_if(zero, Status::DivZero, pc);
        let r = if rem {
            self.b.ins().iconst(I64, 0)
        } else {
            let min = match s.bits() {
                8 => i64::from(i8::MIN),
                16 => i64::from(i16::MIN),
                32 => i64::from(i32::MIN),
                _ => i64::MIN,
            };
            let ovf = self.b.ins().icmp_imm_s(IntCC::Equal, x, min);
            self.fail_const_if(ovf, Status::Overflow, pc);
            self.b.ins().ineg(x)
        };
        self.b.ins().jump(join, &[BlockArg::Value(r)]);

        self.b.switch_to_block(join);
        res
    }

    /// Saturating float → integer conversion (Rust `as`: toward zero, NaN → 0), to the
    /// canonical cell of `to`.
    fn f2i(&mut self, to: Scalar, x: Value) -> Value {
        let b = &mut self.b;
        match to {
            Scalar::I64 => b.ins().fcvt_to_sint_sat(I64, x),
            Scalar::U64 => b.ins().fcvt_to_uint_sat(I64, x),
            Scalar::I32 => {
                let t = b.ins().fcvt_to_sint_sat(I32, x);
                b.ins().sextend(I64, t)
            }
            Scalar::U32 => {
                let t = b.ins().fcvt_to_uint_sat(I32, x);
                b.ins().uextend(I64, t)
            }
            Scalar::I8 | Scalar::I16 => {
                // Saturate to int32, then clamp: both monotone, so the composition saturates.
                let (lo, hi) = if to == Scalar::I8 {
                    (i64::from(i8::MIN), i64::from(i8::MAX))
                } else {
                    (i64::from(i16::MIN), i64::from(i16::MAX))
                };
                let t = b.ins().fcvt_to_sint_sat(I32, x);
                let hi = b.ins().iconst(I32, hi);
                let lo = b.ins().iconst(I32, lo);
                let t = b.ins().smin(t, hi);
                let t = b.ins().smax(t, lo);
                b.ins().sextend(I64, t)
            }
            _ => {
                // uint8 / uint16.
                let hi = if to == Scalar::U8 { 0xff } else { 0xffff };
                let t = b.ins().fcvt_to_uint_sat(I32, x);
                let hi = b.ins().iconst(I32, hi);
                let t = b.ins().umin(t, hi);
                b.ins().uextend(I64, t)
            }
        }
    }

    /// minimumNumber/maximumNumber as `cajeta_bytecode::float` defines them: a NaN operand
    /// yields the other one; otherwise the smaller (larger) one, and on a tie the bits of
    /// both or-ed (and-ed), which orders -0.0 below +0.0.
    fn fminmax(&mut self, min: bool, x: Value, y: Value) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let ity = if ty == F64 { I64 } else { I32 };
        let xnan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
        let cc = if min {
            FloatCC::LessThan
        } else {
            FloatCC::GreaterThan
        };
        let better = self.b.ins().fcmp(cc, y, x);
        let t = self.b.ins().select(better, y, x);
        let tie = self.b.ins().fcmp(FloatCC::Equal, x, y);
        let flags = MemFlagsData::new();
        let xb = self.b.ins().bitcast(ity, flags, x);
        let yb = self.b.ins().bitcast(ity, flags, y);
        let zb = if min {
            self.b.ins().bor(xb, yb)
        } else {
            self.b.ins().band(xb, yb)
        };
        let z = self.b.ins().bitcast(ty, flags, zb);
        let t = self.b.ins().select(tie, z, t);
        self.b.ins().select(xnan, y, t)
    }

    /// `math1.*`.
    fn math1(&mut self, s: Scalar, sel: u16, x: Value) -> Result<Value, String> {
        let f = MathFn::from_u16(sel).ok_or_else(|| format!("unknown math function {sel}"))?;
        let b = &mut self.b;
        Ok(match f {
            MathFn::Sqrt => b.ins().sqrt(x),
            MathFn::Floor => b.ins().floor(x),
            MathFn::Ceil => b.ins().ceil(x),
            MathFn::Trunc => b.ins().trunc(x),
            MathFn::Abs => b.ins().fabs(x),
            MathFn::Rsqrt if s == Scalar::F64 => {
                let r = b.ins().sqrt(x);
                let one = b.ins().f64const(1.0);
                b.ins().fdiv(one, r)
            }
            _ => {
                let sel = self.i32c(u32::from(sel));
                if s == Scalar::F64 {
                    let addr = helpers::math1_f64 as *const () as usize;
                    self.call1(addr, &[I32, F64], F64, &[sel, x])
                } else {
                    let addr = helpers::math1_f32 as *const () as usize;
                    self.call1(addr, &[I32, F32], F32, &[sel, x])
                }
            }
        })
    }

    // ---- instructions -------------------------------------------------------------------

    /// Translates one instruction; returns true if it ended the current block.
    fn instr(&mut self, pc: u32, i: Instr) -> Result<bool, JitError> {
        if self.dev.is_some() {
            if let Some(terminated) = self.device_instr(pc, i)? {
                return Ok(terminated);
            }
        }
        if let Some(site) = self.sites.iter().find(|s| s.start == pc) {
            // The inlined call's own check: at the depth limit the call fails before its
            // frame counts, at the call site.
            let word = i64::from(site.call_pc);
            let fault = self.fault_target(pc);
            self.depth_check(word, fault);
        }
        let hooks = *self.s.hooks;
        match i.op {
            Op::Nop => {}
            Op::Mov => {
                let v = self.get(i.b);
                self.set(i.a, v);
            }
            Op::LoadK => {
                let k = i.bc();
                match self.s.module.consts.get(k as usize) {
                    Some(Const::Bits(bits)) => {
                        let v = match self.kind(i.a) {
                            Kind::F64 => self.b.ins().f64const(Ieee64::with_bits(*bits)),
                            Kind::F32 => self.b.ins().f32const(Ieee32::with_bits(*bits as u32)),
                            _ => self.b.ins().iconst(I64, *bits as i64),
                        };
                        self.set(i.a, v);
                    }
                    Some(Const::Str(_)) => {
                        let consts = self.consts;
                        let h = self.b.ins().load(I64, MF, consts, 8 * k as i32);
                        self.set(i.a, h);
                    }
                    None => return Err(self.err(pc, format!("constant {k} out of range"))),
                }
            }
            Op::LoadI => {
                let v = self.b.ins().iconst(I64, i64::from(i.bc() as i32));
                self.set(i.a, v);
            }
            Op::LoadNull => {
                let v = self.b.ins().iconst(I64, 0);
                self.set(i.a, v);
            }
            Op::Jmp => {
                let t = i.bc();
                if t <= pc {
                    self.consume_fuel(pc);
                    if self.rotate(t)? {
                        return Ok(true);
                    }
                }
                let blk = self.branch_block(pc, t)?;
                let blk = self.exit_edge(pc, t, blk);
                self.b.ins().jump(blk, &[]);
                return Ok(true);
            }
            Op::JmpIf | Op::JmpIfNot => {
                let c = self.get(i.a);
                let t = i.bc();
                let (taken, edge) = self.edge(pc, t)?;
                // (The fallthrough may enter a loop: through its preheader.)
                let next = self.branch_block(pc, pc + 1)?;
                let next = self.exit_edge(pc, pc + 1, next);
                if i.op == Op::JmpIf {
                    self.b.ins().brif(c, taken, &[], next, &[]);
                } else {
                    self.b.ins().brif(c, next, &[], taken, &[]);
                }
                self.fill_edge(pc, t, edge)?;
                return Ok(true);
            }
            Op::Call if self.tail.as_ref().is_some_and(|t| t.call.pc == pc) => {
                self.tail_jump(pc, i)?;
                return Ok(true);
            }
            Op::Call => self.call(pc, i)?,
            Op::Ret | Op::RetOwn | Op::RetVoid => {
                // (status 0 | own << 32, result cell).
                let (st, v) = match i.op {
                    Op::RetVoid => {
                        let z = self.b.ins().iconst(I64, 0);
                        (z, z)
                    }
                    Op::Ret => {
                        let v = self.get_cell(i.a);
                        let v = self.fold_result(v);
                        (self.b.ins().iconst(I64, 0), v)
                    }
                    _ => {
                        let v = self.get_cell(i.a);
                        let flag = self.get(i.b);
                        let c = self.b.ins().icmp_imm_s(IntCC::NotEqual, flag, 0);
                        let own = self.bool_of(c);
                        (self.b.ins().ishl_imm_u(own, 32), v)
                    }
                };
                self.epilogue();
                self.b.ins().return_(&[st, v]);
                return Ok(true);
            }
            Op::TakeOwn => {
                let v = self.b.use_var(self.own_var);
                self.set(i.a, v);
            }
            Op::EqStr => {
                let (x, y) = (self.get(i.b), self.get(i.c));
                self.hook(pc, hooks.str_eq as usize, &[I64, I64], &[x, y]);
                let r = self.ret_cell();
                self.set(i.a, r);
            }
            Op::EqRef => {
                let (x, y) = (self.get(i.b), self.get(i.c));
                let c = self.b.ins().icmp(IntCC::Equal, x, y);
                let v = self.bool_of(c);
                self.set(i.a, v);
            }
            Op::LNot => {
                let x = self.get(i.b);
                let c = self.b.ins().icmp_imm_s(IntCC::Equal, x, 0);
                let v = self.bool_of(c);
                self.set(i.a, v);
            }
            Op::SToF32 | Op::UToF32 | Op::SToF64 | Op::UToF64 => {
                let x = self.get(i.b);
                let ty = if matches!(i.op, Op::SToF32 | Op::UToF32) {
                    F32
                } else {
                    F64
                };
                let v = if matches!(i.op, Op::SToF32 | Op::SToF64) {
                    self.b.ins().fcvt_from_sint(ty, x)
                } else {
                    self.b.ins().fcvt_from_uint(ty, x)
                };
                self.set(i.a, v);
            }
            Op::F32ToF64 => {
                let x = self.get(i.b);
                let v = self.b.ins().fpromote(F64, x);
                self.set(i.a, v);
            }
            Op::F64ToF32 => {
                let x = self.get(i.b);
                let v = self.b.ins().fdemote(F32, x);
                self.set(i.a, v);
            }
            // float16/bfloat16 (T2): the shared `half` conversions, as helpers; the 16-bit
            // side is the canonical cell (`I64`).
            Op::F16ToF32
            | Op::BF16ToF32
            | Op::F32ToF16
            | Op::F32ToBF16
            | Op::F64ToF16
            | Op::F64ToBF16 => {
                let (helper, from, to) = match i.op {
                    Op::F16ToF32 => (helpers::f16_to_f32 as *const (), I64, F32),
                    Op::BF16ToF32 => (helpers::bf16_to_f32 as *const (), I64, F32),
                    Op::F32ToF16 => (helpers::f32_to_f16 as *const (), F32, I64),
                    Op::F32ToBF16 => (helpers::f32_to_bf16 as *const (), F32, I64),
                    Op::F64ToF16 => (helpers::f64_to_f16 as *const (), F64, I64),
                    _ => (helpers::f64_to_bf16 as *const (), F64, I64),
                };
                let x = self.get(i.b);
                let v = self.call1(helper as usize, &[from], to, &[x]);
                self.set(i.a, v);
            }
            Op::F32ToI8
            | Op::F32ToU8
            | Op::F32ToI16
            | Op::F32ToU16
            | Op::F32ToI32
            | Op::F32ToU32
            | Op::F32ToI64
            | Op::F32ToU64
            | Op::F64ToI8
            | Op::F64ToU8
            | Op::F64ToI16
            | Op::F64ToU16
            | Op::F64ToI32
            | Op::F64ToU32
            | Op::F64ToI64
            | Op::F64ToU64 => {
                // `cvt.<to>.<from>`.
                let to =
                    i.op.mnemonic()
                        .split('.')
                        .nth(1)
                        .and_then(suffix_scalar)
                        .ok_or_else(|| self.err(pc, "malformed conversion mnemonic".into()))?;
                let x = self.get(i.b);
                let v = self.f2i(to, x);
                self.set(i.a, v);
            }
            Op::Concat => {
                let (x, y) = (self.get(i.b), self.get(i.c));
                self.hook(pc, hooks.concat as usize, &[I64, I64], &[x, y]);
                let r = self.ret_cell();
                self.set(i.a, r);
            }
            Op::FmtFixed => {
                let x = self.get_cell(i.b);
                let d = self.i32c(u32::from(i.c));
                self.hook(pc, hooks.fmt_fixed as usize, &[I64, I32], &[x, d]);
                let r = self.ret_cell();
                self.set(i.a, r);
            }
            Op::Format => {
                let vals =
                    i.c.checked_add(1)
                        .ok_or_else(|| self.err(pc, "format registers out of range".into()))?;
                let (fmt, strs, vals) = (self.get(i.b), self.get(i.c), self.get(vals));
                self.hook(
                    pc,
                    hooks.format as usize,
                    &[I64, I64, I64],
                    &[fmt, strs, vals],
                );
                let r = self.ret_cell();
                self.set(i.a, r);
            }
            Op::ParseInt => {
                let x = self.get(i.b);
                self.hook(pc, hooks.parse_int as usize, &[I64], &[x]);
                let r = self.ret_cell();
                self.set(i.a, r);
            }
            Op::StrCount | Op::StrSize => {
                let x = self.get(i.b);
                let bytes = self.i32c(u32::from(i.op == Op::StrSize));
                self.hook(pc, hooks.str_len as usize, &[I64, I32], &[x, bytes]);
                let r = self.ret_cell();
                self.set(i.a, r);
            }
            Op::SysTime => {
                let sel = self.i32c(u32::from(i.b));
                self.hook(pc, hooks.clock as usize, &[I32], &[sel]);
                let r = self.ret_cell();
                self.set(i.a, r);
            }
            Op::SysExit => {
                // The program ends: the exit status (r[a] & 0xFF) in `ret`, then the same exit
                // as an error (the embedder ignores the trace).
                let v = self.get(i.a);
                let code = self.b.ins().band_imm_s(v, 0xff);
                let ctx = self.ctx;
                self.b.ins().store(MF, code, ctx, off::RET);
                let st = self.b.ins().iconst(I32, Status::Exit as i64);
                let word = self.pc_word(pc);
                let pcv = self.b.ins().iconst(I32, word);
                self.b
                    .ins()
                    .jump(self.fault, &[BlockArg::Value(st), BlockArg::Value(pcv)]);
                return Ok(true);
            }
            Op::Print => {
                let x = self.get(i.a);
                let flags = self.i32c(u32::from(i.b));
                self.hook(pc, hooks.print as usize, &[I64, I32], &[x, flags]);
            }
            Op::NewArr => {
                let Some(Type::Array(e)) = self.f.regs.get(usize::from(i.a)).copied() else {
                    return Err(self.err(pc, "newarr into a non-array register".into()));
                };
                let n = self.get(i.b);
                let elem = self.b.ins().iconst(I64, encode_elem(e) as i64);
                self.hook(pc, hooks.new_array as usize, &[I64, I64], &[elem, n]);
                let r = self.ret_cell();
                self.set(i.a, r);
            }
            Op::ArrLen => {
                let arr = self.get(i.b);
                let reg = self.reg_id(pc, i.b);
                self.hook(pc, hooks.array_len as usize, &[I64, I32], &[arr, reg]);
                let r = self.ret_cell();
                self.set(i.a, r);
            }
            Op::NewObj => {
                let class = self.i32c(i.bc());
                self.hook(pc, hooks.new_object as usize, &[I32], &[class]);
                let r = self.ret_cell();
                self.set(i.a, r);
            }
            Op::GetField | Op::SetField => self.field(pc, i)?,
            Op::ChkObj => self.check_object(pc, i),
            // Owns-flags of reference elements: through the array hooks, as `aget.ref`.
            Op::ArrOwnGet => self.array(pc, i, true, ELEM_OWN_FLAG)?,
            Op::ArrOwnSet => self.array(pc, i, false, ELEM_OWN_FLAG)?,
            Op::ArrOwnTake => {
                let arr = self.get(i.b);
                let e = self.i32c(ELEM_TAKE_OWNED);
                let unused = self.b.ins().iconst(I64, 0);
                let reg = self.reg_id(pc, i.b);
                let params = [I32, I64, I64, I32];
                let args = [e, arr, unused, reg];
                self.hook(pc, hooks.array_get as usize, &params, &args);
                let r = self.ret_cell();
                self.set_cell(i.a, r);
            }
            Op::GetStatic => {
                let st = self.statics;
                let v = self.b.ins().load(I64, MF, st, 8 * i32::from(i.b));
                self.set_cell(i.a, v);
            }
            Op::SetStatic => {
                let v = self.get_cell(i.a);
                let st = self.statics;
                self.b.ins().store(MF, v, st, 8 * i32::from(i.b));
            }
            Op::Drop => {
                let flag = self.get(i.b);
                let rel = self.b.create_block();
                let cont = self.b.create_block();
                self.b.ins().brif(flag, rel, &[], cont, &[]);
                self.b.switch_to_block(rel);
                let obj = self.get(i.a);
                self.hook(pc, hooks.release as usize, &[I64], &[obj]);
                self.b.ins().jump(cont, &[]);
                self.b.switch_to_block(cont);
            }
            Op::PopcU32
            | Op::BrevU32
            | Op::RotlU32
            | Op::RotrU32
            | Op::F32Bits
            | Op::BitsF32
            | Op::F64Bits
            | Op::BitsF64 => self.bits_op(i),
            Op::FmaF32 | Op::FmaF64 => {
                let (acc, x, y) = (self.get(i.a), self.get(i.b), self.get(i.c));
                let v = self.b.ins().fma(acc, x, y);
                self.set(i.a, v);
            }
            op if xpu_host(op) => self.xpu_op(pc, i),
            op if unsupported(op) => {
                return Err(self.err(
                    pc,
                    format!("`{}` is not supported by the JIT", op.mnemonic()),
                ))
            }
            op => match self.reduced_product(pc) {
                Some(p) => {
                    // A strength-reduced `mul.<int>` (the scalar is its suffix's).
                    let v = self.b.use_var(p);
                    let s = op
                        .mnemonic()
                        .split_once('.')
                        .and_then(|(_, s)| suffix_scalar(s));
                    let v = match s {
                        Some(s) => self.canon(s, v),
                        None => return Err(self.err(pc, "malformed multiplication".into())),
                    };
                    self.set(i.a, v);
                }
                None => {
                    self.generic(pc, i, op)?;
                    self.advance_products(pc);
                }
            },
        }
        Ok(false)
    }

    /// `Bits` and the `Cajeta` bit casts (XPU §2.12), computed on canonical cells.
    fn bits_op(&mut self, i: Instr) {
        let x = self.get_cell(i.b);
        let low = |tr: &mut Self, v: Value| tr.b.ins().ireduce(I32, v);
        let r = match i.op {
            Op::PopcU32 | Op::BrevU32 => {
                let x32 = low(self, x);
                let t = if i.op == Op::PopcU32 {
                    self.b.ins().popcnt(x32)
                } else {
                    self.b.ins().bitrev(x32)
                };
                self.b.ins().uextend(I64, t)
            }
            Op::RotlU32 | Op::RotrU32 => {
                let y = self.get_cell(i.c);
                let (x32, y32) = (low(self, x), low(self, y));
                // Cranelift rotates by the amount modulo the width, as Bits does.
                let t = if i.op == Op::RotlU32 {
                    self.b.ins().rotl(x32, y32)
                } else {
                    self.b.ins().rotr(x32, y32)
                };
                self.b.ins().uextend(I64, t)
            }
            Op::F32Bits => self.canon(Scalar::I32, x),
            Op::BitsF32 => {
                let t = self.b.ins().ireduce(I32, x);
                self.b.ins().uextend(I64, t)
            }
            _ => x,
        };
        self.set_cell(i.a, r);
    }

    /// The families written `base.suffix` with a scalar suffix: arithmetic, bitwise,
    /// comparisons, wraps, string conversions, array accesses and float functions.
    fn generic(&mut self, pc: u32, i: Instr, op: Op) -> Result<(), JitError> {
        let no_lowering = |tr: &Self| tr.err(pc, format!("`{}` has no lowering", op.mnemonic()));
        let (base, suffix) = op
            .mnemonic()
            .split_once('.')
            .ok_or_else(|| no_lowering(self))?;
        if (base == "aget" || base == "aset") && suffix == "ref" {
            return self.array(pc, i, base == "aget", ELEM_REF);
        }
        let s = suffix_scalar(suffix).ok_or_else(|| no_lowering(self))?;
        if s.is_float() {
            return self.float(pc, i, base, s);
        }
        let hooks = *self.s.hooks;
        let v = match base {
            "aget" | "aset" => return self.array(pc, i, base == "aget", s as u32),
            "tostr" => {
                let cell = self.get_cell(i.b);
                let sc = self.i32c(s as u32);
                self.hook(pc, hooks.to_string as usize, &[I32, I64], &[sc, cell]);
                let r = self.ret_cell();
                self.set(i.a, r);
                return Ok(());
            }
            "wrap" => {
                let x = self.get(i.b);
                self.canon(s, x)
            }
            "neg" | "not" | "abs" | "addi" => {
                let x = self.get(i.b);
                match base {
                    "neg" => {
                        let t = self.b.ins().ineg(x);
                        self.canon(s, t)
                    }
                    "not" => {
                        let t = self.b.ins().bnot(x);
                        if s.is_signed() {
                            t
                        } else {
                            self.canon(s, t)
                        }
                    }
                    "abs" => {
                        let t = self.b.ins().iabs(x);
                        self.canon(s, t)
                    }
                    _ => {
                        let t = self.b.ins().iadd_imm_s(x, i64::from(i.c as i16));
                        self.canon(s, t)
                    }
                }
            }
            _ => {
                let (x, y) = (self.get(i.b), self.get(i.c));
                let signed = s.is_signed();
                let b = &mut self.b;
                match base {
                    "add" => {
                        let t = b.ins().iadd(x, y);
                        self.canon(s, t)
                    }
                    "sub" => {
                        let t = b.ins().isub(x, y);
                        self.canon(s, t)
                    }
                    "mul" => {
                        let t = b.ins().imul(x, y);
                        self.canon(s, t)
                    }
                    "div" | "rem" => self.divrem(pc, s, base == "rem", x, y),
                    "and" => b.ins().band(x, y),
                    "or" => b.ins().bor(x, y),
                    "xor" => b.ins().bxor(x, y),
                    "min" if signed => b.ins().smin(x, y),
                    "min" => b.ins().umin(x, y),
                    "max" if signed => b.ins().smax(x, y),
                    "max" => b.ins().umax(x, y),
                    "shl" | "shr" | "ushr" => {
                        let m = b.ins().band_imm_s(y, i64::from(s.bits() - 1));
                        match base {
                            "shl" => {
                                let t = b.ins().ishl(x, m);
                                self.canon(s, t)
                            }
                            "shr" if signed => b.ins().sshr(x, m),
                            "ushr" if signed && s.bits() < 64 => {
                                let w = b.ins().band_imm_s(x, Self::mask_of(s));
                                let t = self.b.ins().ushr(w, m);
                                self.canon(s, t)
                            }
                            _ => b.ins().ushr(x, m),
                        }
                    }
                    "eq" | "ne" | "lt" | "le" => {
                        let cc = match (base, signed) {
                            ("eq", _) => IntCC::Equal,
                            ("ne", _) => IntCC::NotEqual,
                            ("lt", true) => IntCC::SignedLessThan,
                            ("lt", false) => IntCC::UnsignedLessThan,
                            ("le", true) => IntCC::SignedLessThanOrEqual,
                            _ => IntCC::UnsignedLessThanOrEqual,
                        };
                        let c = b.ins().icmp(cc, x, y);
                        self.bool_of(c)
                    }
                    _ => return Err(no_lowering(self)),
                }
            }
        };
        self.set(i.a, v);
        Ok(())
    }

    /// Float families (`add.f64`, `min.f32`, `math1.f64`, `eq.f32`, `tostr.f64`, …).
    fn float(&mut self, pc: u32, i: Instr, base: &str, s: Scalar) -> Result<(), JitError> {
        let f64t = s == Scalar::F64;
        let hooks = *self.s.hooks;
        let v = match base {
            "aget" | "aset" => return self.array(pc, i, base == "aget", s as u32),
            "tostr" => {
                let cell = self.get_cell(i.b);
                let sc = self.i32c(s as u32);
                self.hook(pc, hooks.to_string as usize, &[I32, I64], &[sc, cell]);
                let r = self.ret_cell();
                self.set(i.a, r);
                return Ok(());
            }
            "neg" => {
                let x = self.get(i.b);
                self.b.ins().fneg(x)
            }
            "math1" => {
                let x = self.get(i.b);
                self.math1(s, i.c, x).map_err(|m| self.err(pc, m))?
            }
            _ => {
                let (x, y) = (self.get(i.b), self.get(i.c));
                let b = &mut self.b;
                match base {
                    "add" => b.ins().fadd(x, y),
                    "sub" => b.ins().fsub(x, y),
                    "mul" => b.ins().fmul(x, y),
                    "div" => divide(b, x, y),
                    "rem" if f64t => {
                        self.f64_helper(helpers::rem_f64 as *const () as usize, &[x, y])
                    }
                    "rem" => self.f32_helper(helpers::rem_f32 as *const () as usize, &[x, y]),
                    "pow" if f64t => {
                        self.f64_helper(helpers::pow_f64 as *const () as usize, &[x, y])
                    }
                    "pow" => self.f32_helper(helpers::pow_f32 as *const () as usize, &[x, y]),
                    "atan2" if f64t => {
                        self.f64_helper(helpers::atan2_f64 as *const () as usize, &[x, y])
                    }
                    "atan2" => self.f32_helper(helpers::atan2_f32 as *const () as usize, &[x, y]),
                    "min" => self.fminmax(true, x, y),
                    "max" => self.fminmax(false, x, y),
                    "eq" | "ne" | "lt" | "le" => {
                        let cc = match base {
                            "eq" => FloatCC::Equal,
                            "ne" => FloatCC::NotEqual,
                            "lt" => FloatCC::LessThan,
                            _ => FloatCC::LessThanOrEqual,
                        };
                        let c = b.ins().fcmp(cc, x, y);
                        self.bool_of(c)
                    }
                    _ => return Err(self.err(pc, format!("`{}` has no lowering", i.op.mnemonic()))),
                }
            }
        };
        self.set(i.a, v);
        Ok(())
    }

    /// A host xpu instruction through the `xpu` hook, which reads and writes its operands in
    /// the window (a launch reads a whole register range): the registers it reads go to the
    /// window before the call ([`cajeta_bytecode::effects`]), and those it writes come back
    /// after it. (String registers, the collector's roots, live in the window anyway.)
    fn xpu_op(&mut self, pc: u32, i: Instr) {
        let mut regs = Vec::new();
        cajeta_bytecode::effects::reads(self.s.module, i, &mut regs);
        for &r in &regs {
            self.spill(r);
        }
        let hooks = *self.s.hooks;
        let func = self.i32c(self.s.func);
        let op = self.i32c(i.op as u32);
        let abc = u64::from(i.a) | u64::from(i.b) << 16 | u64::from(i.c) << 32;
        let abc = self.b.ins().iconst(I64, abc as i64);
        let base = self.regs_off_cells;
        self.hook(
            pc,
            hooks.xpu as usize,
            &[I32, I32, I64, I64],
            &[func, op, abc, base],
        );
        cajeta_bytecode::effects::writes(i, &mut regs);
        for &r in &regs {
            if self.kind(r) != Kind::Mem {
                let regs = self.regs();
                let cell = self.b.ins().load(I64, MF, regs, 8 * i32::from(r));
                self.set_cell(r, cell);
            }
        }
    }

    /// `aget.*` / `aset.*`: in memory ([`Tr::memory_access`]), except that in a promoted
    /// loop ([`crate::promote`]) the element may be, or also be, in a variable.
    fn array(&mut self, pc: u32, i: Instr, get: bool, elem: u32) -> Result<(), JitError> {
        let (arr_reg, idx_reg, value) = if get {
            (i.b, i.c, i.a)
        } else {
            (i.a, i.b, i.c)
        };
        let role = self.promoted_role(pc, arr_reg, idx_reg);
        if self.promoted_fast(&role, get, value) {
            return Ok(());
        }
        self.memory_access(pc, i, get, elem);
        self.promoted_after(role, get, arr_reg, idx_reg, value);
        Ok(())
    }

    /// An element access in memory. For arrays of scalars (with inline objects on) the
    /// access is inline through the object views; what fails the inline checks — null, a
    /// stale handle, an index out of bounds — can only be an error for a register of that
    /// array type, so it goes to a cold block where the hook raises it. Arrays of references
    /// (and their owns-flags, `elem` past [`ELEM_REF`]) use the hooks.
    fn memory_access(&mut self, pc: u32, i: Instr, get: bool, elem: u32) {
        let hooks = *self.s.hooks;
        let scalar = Scalar::from_u8(elem as u8).filter(|_| elem < ELEM_REF);
        let e = self.i32c(elem);
        if get {
            let (arr, idx) = (self.get(i.b), self.get(i.c));
            let reg = self.reg_id(pc, i.b);
            let (addr, params, args) = (
                hooks.array_get as usize,
                [I32, I64, I64, I32],
                [e, arr, idx, reg],
            );
            match scalar.filter(|_| self.s.inline_objects) {
                Some(s) => {
                    let kind = ObjectView::array_kind(s);
                    let index = Some((idx, i.c));
                    let data = self.object_data(pc, i.b, kind, index, (addr, &params, &args));
                    let at = self.element_addr(data, idx, s);
                    let ty = self.var_type(i.a);
                    let v = self.load_scalar(s, ty, at);
                    self.set(i.a, v);
                }
                None => {
                    self.hook(pc, addr, &params, &args);
                    let r = self.ret_cell();
                    self.set_cell(i.a, r);
                }
            }
        } else {
            let (arr, idx) = (self.get(i.a), self.get(i.b));
            let v = self.get_cell(i.c);
            let reg = self.reg_id(pc, i.a);
            let (addr, params, args) = (
                hooks.array_set as usize,
                [I32, I64, I64, I64, I32],
                [e, arr, idx, v, reg],
            );
            match scalar.filter(|_| self.s.inline_objects) {
                Some(s) => {
                    let kind = ObjectView::array_kind(s);
                    let index = Some((idx, i.b));
                    let data = self.object_data(pc, i.a, kind, index, (addr, &params, &args));
                    let at = self.element_addr(data, idx, s);
                    match self.kind(i.c) {
                        // Floats go to memory from their own registers.
                        Kind::F64 | Kind::F32 => {
                            let x = self.get(i.c);
                            self.b.ins().store(self.mem.elems, x, at, 0);
                        }
                        _ => self.store_scalar(s, v, at),
                    }
                }
                None => self.hook(pc, addr, &params, &args),
            }
        }
    }

    /// `getfield` / `setfield`, inline through the object views (with inline objects on) as
    /// `array` does: V-FIELD makes the field index valid for the register's class and the
    /// view's tag names that class, so a failed check is null or a stale handle, an error the
    /// hook raises in a cold block.
    fn field(&mut self, pc: u32, i: Instr) -> Result<(), JitError> {
        let hooks = *self.s.hooks;
        let get = i.op == Op::GetField;
        let (obj_reg, field) = if get { (i.b, i.c) } else { (i.a, i.b) };
        let obj = self.get(obj_reg);
        let kind = match self.f.regs.get(usize::from(obj_reg)) {
            Some(Type::Object(k)) if self.s.inline_objects => ObjectView::instance_kind(*k),
            _ => None,
        };
        let fieldv = self.i32c(u32::from(field));
        let reg = self.reg_id(pc, obj_reg);
        let offset = 8 * i32::from(field);
        if get {
            let (addr, params, args) = (
                hooks.get_field as usize,
                [I64, I32, I32],
                [obj, fieldv, reg],
            );
            match kind {
                Some(kind) => {
                    let data = self.object_data(pc, obj_reg, kind, None, (addr, &params, &args));
                    let ty = self.var_type(i.a);
                    let v = self.b.ins().load(ty, self.mem.fields, data, offset);
                    self.set(i.a, v);
                }
                None => {
                    self.hook(pc, addr, &params, &args);
                    let r = self.ret_cell();
                    self.set_cell(i.a, r);
                }
            }
        } else {
            let v = self.get_cell(i.c);
            let (addr, params, args) = (
                hooks.set_field as usize,
                [I64, I32, I64, I32],
                [obj, fieldv, v, reg],
            );
            match kind {
                Some(kind) => {
                    let data = self.object_data(pc, obj_reg, kind, None, (addr, &params, &args));
                    self.b.ins().store(self.mem.fields, v, data, offset);
                }
                None => self.hook(pc, addr, &params, &args),
            }
        }
        Ok(())
    }

    /// `chk.obj`: the receiver of an instance call is a live object, inline through the object
    /// views as `getfield` (whose hook raises the error when it is not).
    fn check_object(&mut self, pc: u32, i: Instr) {
        let hooks = *self.s.hooks;
        let obj = self.get(i.a);
        let what = self.i32c(FIELD_CHECK_CALL | u32::from(i.b));
        let reg = self.reg_id(pc, i.a);
        let (addr, params, args) = (hooks.get_field as usize, [I64, I32, I32], [obj, what, reg]);
        let kind = match self.f.regs.get(usize::from(i.a)) {
            Some(Type::Object(k)) if self.s.inline_objects => ObjectView::instance_kind(*k),
            _ => None,
        };
        match kind {
            Some(kind) => {
                self.object_data(pc, i.a, kind, None, (addr, &params, &args));
            }
            None => self.hook(pc, addr, &params, &args),
        }
    }

    /// The inline access path of an element or field instruction at `pc` on `handle` (a
    /// register of view kind `kind`): returns the object's data address, in a block reached
    /// only when the object is live and of that kind (and, with `index`, the index is below
    /// its length). Every other case goes to a cold block that calls the instruction's hook
    /// (`slow`: address, parameter types, arguments), which raises the error, and leaves the
    /// function. Inside a hoisting loop the lookup was made in the preheader and only the
    /// index (or, for instances, the lookup's success) is checked here; elsewhere an earlier
    /// lookup in the same bytecode block is reused ([`Tr::seen_view`]).
    fn object_data(
        &mut self,
        pc: u32,
        reg: u16,
        kind: u32,
        index: Option<(Value, u16)>,
        slow: (usize, &[types::Type], &[Value]),
    ) -> Value {
        if let Some((data_var, len_var)) = self.hoisted_view(pc, reg) {
            // The same array and index register checked earlier in this block (neither
            // written since, no call or drop in a hoisting loop): the check holds.
            let key = index.map(|(_, r)| (reg, r));
            if key.is_some_and(|k| self.checked.contains(&k)) {
                return self.b.use_var(data_var);
            }
            self.checked.extend(key);
            let index = index.map(|(v, _)| v);
            let error = self.error_block(pc, slow);
            let len = self.b.use_var(len_var);
            let bad = match index {
                Some(index) => self
                    .b
                    .ins()
                    .icmp(IntCC::UnsignedGreaterThanOrEqual, index, len),
                None => self.b.ins().icmp_imm_s(IntCC::Equal, len, 0),
            };
            let live = self.b.create_block();
            self.b.ins().brif(bad, error, &[], live, &[]);
            self.b.switch_to_block(live);
            return self.b.use_var(data_var);
        }
        if let Some(data) = self.seen_view(pc, reg, kind, index, slow) {
            return data;
        }
        let index_reg = index.map(|(_, r)| r);
        let index = index.map(|(v, _)| v);
        let error = self.error_block(pc, slow);
        let handle = self.get(reg);
        let (entry, in_table) = self.view_entry(handle);
        let vf = self.mem.views;
        let checked = self.b.create_block();
        self.b.ins().brif(in_table, checked, &[], error, &[]);
        self.b.switch_to_block(checked);
        let tag = self.b.ins().load(I64, vf, entry, off::VIEW_TAG);
        let want = self.want_tag(handle, kind);
        let b = &mut self.b;
        let mut bad = b.ins().icmp(IntCC::NotEqual, tag, want);
        let mut len = None;
        if let Some(index) = index {
            // One branch for both checks: an entry's `len` is readable even when its tag
            // does not match.
            let n = b.ins().load(I64, vf, entry, off::VIEW_LEN);
            // A negative index is a huge unsigned one: out of bounds too.
            let outside = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, index, n);
            bad = b.ins().bor(bad, outside);
            len = Some(n);
        }
        let live = b.create_block();
        b.ins().brif(bad, error, &[], live, &[]);
        b.switch_to_block(live);
        let data = b.ins().load(I64, vf, entry, off::VIEW_DATA);
        if self.dev.is_none() {
            self.seen.retain(|v| v.reg != reg);
            self.seen.push(SeenView {
                reg,
                kind,
                data,
                len,
                max_checked: index.and_then(|i| self.constant(i)),
            });
            self.checked.extend(index_reg.map(|x| (reg, x)));
        }
        data
    }

    /// The data address of `reg` as `kind` from an earlier lookup in this bytecode block
    /// ([`SeenView`]), with `index` checked against its length unless an earlier check
    /// covers it (the same index register, or a constant no greater than one checked); `None`
    /// when there is no such lookup (or it did not load the length `index` needs).
    fn seen_view(
        &mut self,
        pc: u32,
        reg: u16,
        kind: u32,
        index: Option<(Value, u16)>,
        slow: (usize, &[types::Type], &[Value]),
    ) -> Option<Value> {
        let k = self
            .seen
            .iter()
            .position(|v| v.reg == reg && v.kind == kind)?;
        let view = self.seen[k];
        let Some((index, x)) = index else {
            return Some(view.data);
        };
        let len = view.len?;
        let c = self.constant(index);
        let covered = self.checked.contains(&(reg, x))
            || c.zip(view.max_checked).is_some_and(|(c, m)| c <= m);
        if !covered {
            let error = self.error_block(pc, slow);
            let bad = self
                .b
                .ins()
                .icmp(IntCC::UnsignedGreaterThanOrEqual, index, len);
            let live = self.b.create_block();
            self.b.ins().brif(bad, error, &[], live, &[]);
            self.b.switch_to_block(live);
            self.checked.push((reg, x));
            if let Some(c) = c {
                self.seen[k].max_checked = Some(view.max_checked.map_or(c, |m| m.max(c)));
            }
        }
        Some(view.data)
    }

    /// The value of `v` when it is a 64-bit integer constant.
    fn constant(&self, v: Value) -> Option<u64> {
        let dfg = &self.b.func.dfg;
        let ValueDef::Result(inst, _) = dfg.value_def(dfg.resolve_aliases(v)) else {
            return None;
        };
        match dfg.insts[inst] {
            InstructionData::UnaryImm {
                opcode: Opcode::Iconst,
                imm,
            } if dfg.value_type(v) == I64 => Some(imm.bits() as u64),
            _ => None,
        }
    }

    /// Ends the [`SeenView`]s that instruction `ins` at `pc` invalidates: its register's, when
    /// it writes it, and all of them when it may release an object.
    fn forget_views(&mut self, pc: usize, ins: &Instr) {
        if self.free_at.get(pc).copied().unwrap_or(true) {
            self.seen.clear();
        } else {
            self.seen.retain(|v| !loops::writes(ins, v.reg));
        }
    }

    /// The address of `handle`'s view entry, and whether its slot index is inside the table
    /// (the entry may only be read when it is). Null's index 0 - 1 is never inside.
    fn view_entry(&mut self, handle: Value) -> (Value, Value) {
        let ctx = self.ctx;
        let vf = self.mem.views;
        let b = &mut self.b;
        // Slot index: the low half minus one. The halves come from a truncation and a
        // subtraction: x86 has no 64-bit AND immediate.
        let low = b.ins().ireduce(I32, handle);
        let low = b.ins().uextend(I64, low);
        let slot = b.ins().iadd_imm_s(low, -1);
        let views = b.ins().load(I64, vf, ctx, off::VIEWS);
        let table = b.ins().load(I64, vf, views, off::VIEWS_PTR);
        let len = b.ins().load(I64, vf, views, off::VIEWS_LEN);
        let in_table = b.ins().icmp(IntCC::UnsignedLessThan, slot, len);
        let offset = b.ins().imul_imm_u(slot, off::VIEW_SIZE);
        let entry = b.ins().iadd(table, offset);
        (entry, in_table)
    }

    /// The tag a live object of `kind` designated by `handle` has: the handle's generation
    /// (its high half) and the kind.
    fn want_tag(&mut self, handle: Value, kind: u32) -> Value {
        let b = &mut self.b;
        let low = b.ins().ireduce(I32, handle);
        let low = b.ins().uextend(I64, low);
        let generation = b.ins().isub(handle, low);
        b.ins().bor_imm_u(generation, i64::from(kind))
    }

    /// The preheader's lookup of `handle` as `kind`: its data address and length, or length
    /// 0 when it is not a live object of that kind (never an error here).
    fn speculative_lookup(&mut self, handle: Value, kind: u32) -> (Value, Value) {
        let (entry, in_table) = self.view_entry(handle);
        let vf = self.mem.views;
        let checked = self.b.create_block();
        let done = self.b.create_block();
        self.b.append_block_param(done, I64);
        self.b.append_block_param(done, I64);
        let zero = self.b.ins().iconst(I64, 0);
        self.b.ins().brif(
            in_table,
            checked,
            &[],
            done,
            &[BlockArg::Value(zero), BlockArg::Value(zero)],
        );
        self.b.switch_to_block(checked);
        let tag = self.b.ins().load(I64, vf, entry, off::VIEW_TAG);
        let want = self.want_tag(handle, kind);
        let b = &mut self.b;
        let ok = b.ins().icmp(IntCC::Equal, tag, want);
        let n = b.ins().load(I64, vf, entry, off::VIEW_LEN);
        let data = b.ins().load(I64, vf, entry, off::VIEW_DATA);
        let zero = b.ins().iconst(I64, 0);
        let n = b.ins().select(ok, n, zero);
        b.ins()
            .jump(done, &[BlockArg::Value(data), BlockArg::Value(n)]);
        b.switch_to_block(done);
        let p = b.block_params(done);
        (p[0], p[1])
    }

    /// A cold block that raises the error of the access at `pc` through its hook (`slow`:
    /// address, parameter types, arguments) and leaves the function; filled at the end
    /// ([`Tr::fill_deferred`]). A hook that unexpectedly succeeds there means the object
    /// views are out of step with the heap, an embedder bug: `Status::Panic`.
    fn error_block(&mut self, pc: u32, slow: (usize, &[types::Type], &[Value])) -> Block {
        let block = self.b.create_block();
        self.b.set_cold_block(block);
        let (hook, params, args) = slow;
        self.deferred.push(Deferred {
            block,
            pc,
            hook,
            params: params.to_vec(),
            args: args.to_vec(),
        });
        block
    }

    /// Fills the [`Tr::error_block`]s.
    fn fill_deferred(&mut self) {
        for d in std::mem::take(&mut self.deferred) {
            self.b.switch_to_block(d.block);
            // Before the hook: no element variable stays live across a call.
            let fault = self.write_back_before_fault(d.pc);
            let mut p = vec![I64];
            p.extend_from_slice(&d.params);
            let mut a = vec![self.ctx];
            a.extend_from_slice(&d.args);
            let st = self.call1(d.hook, &p, I32, &a);
            let panic = self.b.ins().iconst(I32, Status::Panic as i64);
            let st = self.b.ins().select(st, st, panic);
            let word = self.pc_word(d.pc);
            let pcv = self.b.ins().iconst(I32, word);
            self.b
                .ins()
                .jump(fault, &[BlockArg::Value(st), BlockArg::Value(pcv)]);
        }
    }

    /// Address of element `index` of an array of `s` whose data starts at `data`.
    fn element_addr(&mut self, data: Value, index: Value, s: Scalar) -> Value {
        let width = scalar_width(s);
        let offset = if width == 1 {
            index
        } else {
            self.b
                .ins()
                .ishl_imm_u(index, i64::from(width.trailing_zeros()))
        };
        self.b.ins().iadd(data, offset)
    }

    /// Loads a stored `s` at `addr` as a value of type `ty` (the register's variable type:
    /// the float itself, or the canonical cell).
    fn load_scalar(&mut self, s: Scalar, ty: types::Type, addr: Value) -> Value {
        let mf = self.mem.elems;
        let b = &mut self.b;
        match s {
            Scalar::F64 | Scalar::F32 if ty != I64 => b.ins().load(ty, mf, addr, 0),
            Scalar::F64 | Scalar::I64 | Scalar::U64 => b.ins().load(I64, mf, addr, 0),
            Scalar::Bool | Scalar::U8 => b.ins().uload8(I64, mf, addr, 0),
            Scalar::I8 => b.ins().sload8(I64, mf, addr, 0),
            Scalar::I16 => b.ins().sload16(I64, mf, addr, 0),
            Scalar::U16 | Scalar::F16 | Scalar::BF16 => b.ins().uload16(I64, mf, addr, 0),
            Scalar::I32 => b.ins().sload32(mf, addr, 0),
            Scalar::Char | Scalar::U32 | Scalar::F32 => b.ins().uload32(mf, addr, 0),
        }
    }

    /// Stores the canonical cell `v` at `addr` as a stored `s` (its low bytes).
    fn store_scalar(&mut self, s: Scalar, v: Value, addr: Value) {
        let mf = self.mem.elems;
        let b = &mut self.b;
        match scalar_width(s) {
            1 => b.ins().istore8(mf, v, addr, 0),
            2 => b.ins().istore16(mf, v, addr, 0),
            4 => b.ins().istore32(mf, v, addr, 0),
            _ => b.ins().store(mf, v, addr, 0),
        };
    }

    /// `call a b c`: the callee's pure prefix in place when it has one
    /// ([`Tr::inline_prefix`]); else a native call of its internal body (direct for
    /// self-recursion, through the table otherwise) with the arguments in machine registers
    /// (a callee short of native stack hands itself to the interpreter: see
    /// [`Tr::native_stack_check`]) — or, when the callee is not compiled, the `call_interp`
    /// hook with the arguments stored in the window. Then the status check, the ownership
    /// bit (for functions that take it) and the result.
    fn call(&mut self, pc: u32, i: Instr) -> Result<(), JitError> {
        let module = self.s.module;
        let callee_idx = u32::from(i.c);
        let callee = module
            .functions
            .get(usize::from(i.c))
            .ok_or_else(|| self.err(pc, format!("function {callee_idx} out of range")))?;
        let ctx = self.ctx;

        let callee_off = self.b.ins().iadd_imm_s(self.regs_off, 8 * i64::from(i.b));
        let depth = self.depth();
        let mut args = vec![ctx, callee_off, depth];
        let mut arg_regs = Vec::new();
        for p in 0..callee.params {
            let r =
                i.b.checked_add(p)
                    .ok_or_else(|| self.err(pc, "argument register out of range".into()))?;
            arg_regs.push(r);
            if self.kind(r) != Kind::Mem {
                args.push(self.get(r));
            }
        }

        // (result cell, ownership bit) of the call, from either path below.
        // The ownership bit only matters to a function that takes it.
        let owns = self.f.code.iter().any(|i| i.op == Op::TakeOwn);
        let done = self.b.create_block();
        self.b.append_block_param(done, I64);
        if owns {
            self.b.append_block_param(done, I64);
        }
        let inline = self.s.inline_objects && self.fuel_var.is_none() && self.dev.is_none();
        if inline && fast_exit(module, callee) {
            let slow = self.b.create_block();
            self.inline_prefix(callee, &args[3..], slow, done)?;
            self.b.switch_to_block(slow);
        }

        if let Some(v) = self.fuel_var {
            let fuel = self.b.use_var(v);
            self.b.ins().store(MF, fuel, ctx, off::FUEL);
        }

        // A compiled callee checks the native stack itself (see `native_stack_check`).
        let jit = self.b.create_block();
        let interp = self.b.create_block();
        let join = self.b.create_block();
        self.b.append_block_param(join, I64);
        self.b.append_block_param(join, I64);
        let entry = if callee_idx == self.s.func {
            self.b.ins().jump(jit, &[]);
            None
        } else {
            let slot = self.s.table + 8 * callee_idx as usize;
            let slot = self.b.ins().iconst(I64, slot as i64);
            let entry = self.b.ins().load(I64, MF, slot, 0);
            self.b.ins().brif(entry, jit, &[], interp, &[]);
            Some(entry)
        };

        self.b.switch_to_block(jit);
        let call = match entry {
            None => self.b.ins().call(self.s.self_ref, &args),
            Some(entry) => {
                let sig = internal_signature(callee, self.s.call_conv);
                let params: Vec<types::Type> = sig.params.iter().map(|p| p.value_type).collect();
                let sig = self.sig(&params, &[I64, I64]);
                self.b.ins().call_indirect(sig, entry, &args)
            }
        };
        let (st, v) = (self.b.inst_results(call)[0], self.b.inst_results(call)[1]);
        self.b
            .ins()
            .jump(join, &[BlockArg::Value(st), BlockArg::Value(v)]);

        // A callee without code runs in the interpreter, which needs its window (holding
        // the arguments, in the caller's window): reserve it, then store the arguments.
        // (Never for a self-call: this function has code.)
        self.b.switch_to_block(interp);
        if entry.is_none() {
            let zero = self.b.ins().iconst(I64, 0);
            let args = [BlockArg::Value(zero), BlockArg::Value(zero)];
            self.b.ins().jump(join, &args);
        } else {
            self.call_interp(pc, i, callee, &arg_regs, join);
        }
        self.b.switch_to_block(join);
        let (st_own, v) = (self.b.block_params(join)[0], self.b.block_params(join)[1]);
        let st = self.b.ins().ireduce(I32, st_own);
        if self.dev.is_none() {
            // The error exit's pc is set in a cold block of its own, not on the way.
            let failed = self.b.create_block();
            let ok = self.b.create_block();
            self.b.set_cold_block(failed);
            self.b.ins().brif(st, failed, &[], ok, &[]);
            self.b.switch_to_block(failed);
            let word = self.pc_word(pc);
            let pcv = self.b.ins().iconst(I32, word);
            let args = [BlockArg::Value(st), BlockArg::Value(pcv)];
            self.b.ins().jump(self.fault, &args);
            self.b.switch_to_block(ok);
        } else {
            self.fail_if(st, st, pc);
        }
        if let Some(fv) = self.fuel_var {
            let fuel = self.b.ins().load(I64, MF, ctx, off::FUEL);
            self.b.def_var(fv, fuel);
        }
        let mut results = vec![BlockArg::Value(v)];
        if owns {
            let own = self.b.ins().ushr_imm_u(st_own, 32);
            results.push(BlockArg::Value(own));
        }
        self.b.ins().jump(done, &results);

        self.b.switch_to_block(done);
        let v = self.b.block_params(done)[0];
        if owns {
            let own = self.b.block_params(done)[1];
            self.b.def_var(self.own_var, own);
        }
        if callee.ret.is_some() {
            self.set_cell(i.a, v);
        }
        Ok(())
    }

    /// The call of `callee` at `pc` through the `call_interp` hook, with the arguments
    /// (`arg_regs`) stored in the callee's window; jumps to `join` with
    /// `(status | own << 32, result cell)`.
    fn call_interp(&mut self, pc: u32, i: Instr, callee: &Function, arg_regs: &[u16], join: Block) {
        self.ensure_room(pc, i64::from(i.b) + callee.regs.len() as i64);
        for &r in arg_regs {
            self.spill(r);
        }
        let regs = self.regs();
        let callee_regs = self.b.ins().iadd_imm_s(regs, 8 * i64::from(i.b));
        let depth = self.depth();
        let (st, v) = self.run_interpreted(u32::from(i.c), callee_regs, depth);
        self.b
            .ins()
            .jump(join, &[BlockArg::Value(st), BlockArg::Value(v)]);
    }

    /// The self-call of a tail-call loop ([`crate::tail`]): past the check the callee's
    /// prologue would make, the fold's operand goes into the accumulator, the arguments
    /// become the parameters and the next pass starts, one level deeper.
    fn tail_jump(&mut self, pc: u32, i: Instr) -> Result<(), JitError> {
        let Some(t) = self.tail.as_ref() else {
            return Err(self.err(pc, "not a tail call".into()));
        };
        let (fold, acc) = (t.call.fold, t.acc);
        let word = self.pc_word(pc);
        self.depth_check(word, self.fault);
        // Everything is read before anything is written (`x` may be a parameter).
        let mut args = Vec::new();
        for p in 0..self.f.params {
            let r =
                i.b.checked_add(p)
                    .ok_or_else(|| self.err(pc, "argument register out of range".into()))?;
            args.push(self.get(r));
        }
        let x = match fold.map(|fold| fold.x) {
            Some(FoldOperand::Reg(r)) => Some(self.get(r)),
            Some(FoldOperand::Loaded { pc: load, reg }) => {
                // A constant loaded after the call: loaded here instead.
                let ins = self.f.code[load as usize];
                self.instr(load, ins)?;
                Some(self.get(reg))
            }
            Some(FoldOperand::Imm(v)) => Some(self.b.ins().iconst(I64, v)),
            None => None,
        };
        let x = match (x, fold) {
            (Some(x), Some(fold)) if fold.negate => Some(self.b.ins().ineg(x)),
            (x, _) => x,
        };
        if let (Some(fold), Some(acc), Some(x)) = (fold, acc, x) {
            let a = self.b.use_var(acc);
            let v = self.fold(fold.op, a, x);
            self.b.def_var(acc, v);
        }
        for (p, v) in (0..).zip(args) {
            self.set(p, v);
        }
        let depth = self.depth();
        let next = self.b.ins().iadd_imm_s(depth, 1);
        self.b.def_var(self.depth, next);
        let start = self.block(0)?;
        self.b.ins().jump(start, &[]);
        Ok(())
    }

    /// What `ret` returns in a tail-call loop with a fold: the accumulator folded with the
    /// result, re-canonicalised, as the elided frames would have computed it. (On the first
    /// pass that is the canonical result cell itself: the accumulator is the identity.)
    fn fold_result(&mut self, v: Value) -> Value {
        let Some((fold, acc)) = self
            .tail
            .as_ref()
            .and_then(|t| Some((t.call.fold?, t.acc?)))
        else {
            return v;
        };
        let a = self.b.use_var(acc);
        let folded = self.fold(fold.op, a, v);
        self.canon(fold.scalar, folded)
    }

    /// `x ⊕ y` on 64-bit cells.
    fn fold(&mut self, op: FoldOp, x: Value, y: Value) -> Value {
        let ins = self.b.ins();
        match op {
            FoldOp::Add => ins.iadd(x, y),
            FoldOp::Mul => ins.imul(x, y),
            FoldOp::And => ins.band(x, y),
            FoldOp::Or => ins.bor(x, y),
            FoldOp::Xor => ins.bxor(x, y),
        }
    }

    /// Loop rotation: a backward `jmp` to a loop header `t` whose block is a
    /// few pure instructions ending in a conditional branch (the test of a `for`/`while`)
    /// gets its own copy of that test, branching straight to the body or the exit. Each
    /// iteration then takes one branch instead of a jump and a branch, and the loop's back
    /// edge enters the body directly. Returns false (nothing emitted) when the header does
    /// not have that shape.
    fn rotate(&mut self, t: u32) -> Result<bool, JitError> {
        // Lockstep kernel code emits a `jmp` once for all its lanes: a copied test would be
        // lane 0's alone.
        if self.dev.as_ref().is_some_and(|d| d.lockstep.is_some()) {
            return Ok(false);
        }
        let f = self.f;
        let (start, end) = (t as usize, (t as usize + ROTATE_MAX).min(f.code.len()));
        let Some(k) = (start..end).find(|&k| f.code[k].op.is_branch()) else {
            return Ok(false);
        };
        let test = f.code[k];
        let leader = |x: usize| self.blocks.get(x).is_some_and(|b| b.is_some());
        let simple = matches!(test.op, Op::JmpIf | Op::JmpIfNot)
            && (start + 1..=k).all(|x| !leader(x))
            && f.code[start..k]
                .iter()
                .all(|&i| pure_total(self.s.module, i));
        if !simple {
            return Ok(false);
        }
        for (x, &ins) in f.code[start..k].iter().enumerate() {
            self.instr((start + x) as u32, ins)?;
        }
        let c = self.get(test.a);
        // As from the test's own pc (the back edge is inside the loop of `t`: no preheader
        // is skipped).
        let taken = self.branch_block(k as u32, test.bc())?;
        let taken = self.exit_edge(k as u32, test.bc(), taken);
        let next = self.branch_block(k as u32, k as u32 + 1)?;
        let next = self.exit_edge(k as u32, k as u32 + 1, next);
        if test.op == Op::JmpIf {
            self.b.ins().brif(c, taken, &[], next, &[]);
        } else {
            self.b.ins().brif(c, next, &[], taken, &[]);
        }
        Ok(true)
    }

    /// Runs function `func` with its window at `regs` through the `call_interp` hook (the
    /// calling frame's depth `depth` in the context): `(status | own << 32, result cell)`.
    fn run_interpreted(&mut self, func: u32, regs: Value, depth: Value) -> (Value, Value) {
        let ctx = self.ctx;
        let hooks = *self.s.hooks;
        self.b.ins().store(MF, depth, ctx, off::DEPTH);
        let func = self.i32c(func);
        let params = [I64, I32, I64];
        let st = self.call1(hooks.call_interp as usize, &params, I32, &[ctx, func, regs]);
        let st = self.b.ins().uextend(I64, st);
        let own = self.b.ins().load(I64, MF, ctx, off::OWN);
        let own = self.b.ins().ishl_imm_u(own, 32);
        let st = self.b.ins().bor(st, own);
        (st, self.ret_cell())
    }

    /// Partial inlining of a call of `g` (arguments `args`, its non-String parameters):
    /// `g`'s code from its entry, as long as it is pure and runs forward ([`prefix_op`]),
    /// translated in place with `g`'s registers as fresh variables. Every path that reaches
    /// a `ret`/`retvoid` jumps to `done` with the result cell (ownership bit 0); a path that
    /// meets anything else (a call, a heap access, a backward branch, the size budget)
    /// jumps to `slow`, the real call, which runs `g` from its start on the unchanged
    /// argument registers: the prefix wrote only its own variables, so nothing it did is
    /// seen twice. The depth check of `g`'s prologue comes first (a call at the depth limit
    /// takes the real call and fails there), so errors and traces are the real call's.
    fn inline_prefix(
        &mut self,
        g: &'a Function,
        args: &[Value],
        slow: Block,
        done: Block,
    ) -> Result<(), JitError> {
        let kinds: Vec<Kind> = g.regs.iter().map(|&t| kind_of(t)).collect();
        let vars: Vec<Variable> = kinds
            .iter()
            .map(|&k| {
                self.b.declare_var(match k {
                    Kind::F32 => F32,
                    Kind::F64 => F64,
                    Kind::Int | Kind::Mem => I64,
                })
            })
            .collect();
        for (&v, &a) in vars.iter().zip(args) {
            self.b.def_var(v, a);
        }
        let full = self.at_depth_limit();
        let zero = self.b.ins().iconst(I64, 0);
        let start = self.b.create_block();
        self.b.ins().brif(full, slow, &[], start, &[]);
        // Translate `g`'s instructions with `g`'s registers (and none of this function's
        // loops: their pcs are not `g`'s).
        let f = std::mem::replace(&mut self.f, g);
        let kinds = std::mem::replace(&mut self.kinds, kinds);
        let vars = std::mem::replace(&mut self.vars, vars);
        let hoisted = std::mem::take(&mut self.hoisted);
        let seen = std::mem::take(&mut self.seen);
        let checked = std::mem::take(&mut self.checked);
        let sites = std::mem::take(&mut self.sites);
        let tail = self.tail.take();
        let emitted = self.emit_prefix(start, slow, (done, zero));
        self.tail = tail;
        self.f = f;
        self.kinds = kinds;
        self.vars = vars;
        self.hoisted = hoisted;
        self.seen = seen;
        self.checked = checked;
        self.sites = sites;
        emitted
    }

    /// The body of [`Tr::inline_prefix`], run with `self.f` the callee: its pure forward
    /// paths from pc 0, one block per reached leader, entered at `start`; `zero` is the
    /// ownership bit of a result (and the cell of `retvoid`).
    fn emit_prefix(
        &mut self,
        start: Block,
        slow: Block,
        (done, zero): (Block, Value),
    ) -> Result<(), JitError> {
        let g = self.f;
        let leader = leaders(g);
        let mut blocks: HashMap<u32, Block> = HashMap::from([(0, start)]);
        let mut work = vec![0u32];
        let mut budget = PREFIX_BUDGET;
        while let Some(first) = work.pop() {
            self.b.switch_to_block(blocks[&first]);
            // (Lookups of one block do not dominate the next.)
            self.seen.clear();
            self.checked.clear();
            let mut pc = first;
            loop {
                let mut block_of = |tr: &mut Self, t: u32| {
                    *blocks.entry(t).or_insert_with(|| {
                        work.push(t);
                        tr.b.create_block()
                    })
                };
                let Some(&ins) = g.code.get(pc as usize) else {
                    self.b.ins().jump(slow, &[]);
                    break;
                };
                if pc != first && leader[pc as usize] {
                    let next = block_of(self, pc);
                    self.b.ins().jump(next, &[]);
                    break;
                }
                if budget == 0 || loop_header(g, pc) {
                    self.b.ins().jump(slow, &[]);
                    break;
                }
                budget -= 1;
                let forward = ins.bc() > pc;
                match ins.op {
                    Op::Ret | Op::RetVoid => {
                        let v = match ins.op {
                            Op::Ret => self.get_cell(ins.a),
                            _ => zero,
                        };
                        // (result, and ownership bit 0 where the caller keeps it)
                        let n = self.b.func.dfg.num_block_params(done);
                        let args = [BlockArg::Value(v), BlockArg::Value(zero)];
                        self.b.ins().jump(done, &args[..n]);
                        break;
                    }
                    Op::Jmp if forward => {
                        let t = block_of(self, ins.bc());
                        self.b.ins().jump(t, &[]);
                        break;
                    }
                    Op::JmpIf | Op::JmpIfNot if forward => {
                        let c = self.get(ins.a);
                        let taken = block_of(self, ins.bc());
                        let next = block_of(self, pc + 1);
                        if ins.op == Op::JmpIf {
                            self.b.ins().brif(c, taken, &[], next, &[]);
                        } else {
                            self.b.ins().brif(c, next, &[], taken, &[]);
                        }
                        break;
                    }
                    _ if prefix_op(self.s.module, ins) && !self.may_fault(ins) => {
                        self.instr(pc, ins)?;
                        pc += 1;
                    }
                    _ => {
                        self.b.ins().jump(slow, &[]);
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether the pure instruction `i` could fail here: an integer division or remainder
    /// whose divisor is not a known constant other than 0 and −1.
    fn may_fault(&mut self, i: Instr) -> bool {
        let m = i.op.mnemonic();
        let int_div = (m.starts_with("div.") || m.starts_with("rem."))
            && !matches!(self.kind(i.a), Kind::F32 | Kind::F64);
        if !int_div {
            return false;
        }
        let signed =
            suffix_scalar(m.split_once('.').map_or("", |(_, s)| s)).is_some_and(|s| s.is_signed());
        // The divisor's value, if its definition (this block's `loadi`) is a constant.
        let k = self
            .b
            .try_use_var(self.vars[usize::from(i.c)])
            .ok()
            .and_then(|v| self.const_of(v));
        !matches!(k, Some(k) if k != 0 && !(signed && k == -1))
    }
}

/// The most instructions of a loop test [`Tr::rotate`] copies (the branch included).
const ROTATE_MAX: usize = 4;

/// The tag of an error pc inside an inlined call ([`Tr::pc_word`]): bit 30, the site's
/// index from bit 20, the callee's pc below.
const INLINED_PC: i64 = 1 << 30;
const INLINED_SITE_SHIFT: i64 = 20;

/// Instructions a partially inlined prefix may take (per path, see [`Tr::inline_prefix`]).
const PREFIX_BUDGET: u32 = 24;

/// Whether `i` may run in a partially inlined prefix: it only computes registers from
/// registers and constants (no heap, statics, strings, hooks or output), and cannot fail
/// except by an integer division, which [`Tr::may_fault`] settles at the site.
fn prefix_op(module: &Module, i: Instr) -> bool {
    match i.op {
        Op::Nop | Op::Mov | Op::LoadI | Op::LoadNull | Op::LNot | Op::EqRef => true,
        Op::LoadK => matches!(module.consts.get(i.bc() as usize), Some(Const::Bits(_))),
        Op::SToF32 | Op::UToF32 | Op::SToF64 | Op::UToF64 | Op::F32ToF64 | Op::F64ToF32 => true,
        op => {
            let m = op.mnemonic();
            if m.starts_with("cvt.") {
                return !op.is_device_only();
            }
            let Some((base, suffix)) = m.split_once('.') else {
                return false;
            };
            suffix_scalar(suffix).is_some()
                && !op.is_device_only()
                && matches!(
                    base,
                    "add"
                        | "sub"
                        | "mul"
                        | "div"
                        | "rem"
                        | "and"
                        | "or"
                        | "xor"
                        | "min"
                        | "max"
                        | "shl"
                        | "shr"
                        | "ushr"
                        | "eq"
                        | "ne"
                        | "lt"
                        | "le"
                        | "neg"
                        | "not"
                        | "abs"
                        | "addi"
                        | "wrap"
                        | "math1"
                        | "pow"
                        | "atan2"
                )
        }
    }
}

/// Whether function `g` of `module` only computes: every instruction a [`prefix_op`], a
/// branch, `ret` or `retvoid`. A call of it cannot free an object however it runs (inlined,
/// compiled or interpreted), so a loop around it keeps its object views (see
/// [`crate::loops`]).
fn pure_function(module: &Module, g: usize) -> bool {
    module.functions.get(g).is_some_and(|g| {
        g.code.iter().all(|&i| {
            matches!(
                i.op,
                Op::Ret | Op::RetVoid | Op::Jmp | Op::JmpIf | Op::JmpIfNot
            ) || prefix_op(module, i)
        })
    })
}

/// A [`prefix_op`] that cannot fail anywhere (no integer division or remainder).
fn pure_total(module: &Module, i: Instr) -> bool {
    let m = i.op.mnemonic();
    prefix_op(module, i) && !m.starts_with("div.") && !m.starts_with("rem.")
}

/// Whether a call of `g` is worth a partially inlined prefix: a `ret` is reachable from its
/// entry through [`prefix_op`]s and forward branches within [`PREFIX_BUDGET`], and `g` has no
/// String register (those live in a window the prefix does not have).
fn fast_exit(module: &Module, g: &Function) -> bool {
    if g.kind != cajeta_bytecode::FnKind::Host || g.regs.iter().any(|&t| kind_of(t) == Kind::Mem) {
        return false;
    }
    let mut seen = vec![false; g.code.len()];
    let mut work = vec![0usize];
    let mut budget = PREFIX_BUDGET;
    while let Some(pc) = work.pop() {
        let Some(&ins) = g.code.get(pc) else {
            continue;
        };
        if std::mem::replace(&mut seen[pc], true) || budget == 0 || loop_header(g, pc as u32) {
            continue;
        }
        budget -= 1;
        match ins.op {
            Op::Ret | Op::RetVoid => return true,
            Op::Jmp if ins.bc() as usize > pc => work.push(ins.bc() as usize),
            Op::JmpIf | Op::JmpIfNot if ins.bc() as usize > pc => {
                work.push(pc + 1);
                work.push(ins.bc() as usize);
            }
            _ if prefix_op(module, ins) => work.push(pc + 1),
            _ => {}
        }
    }
    false
}

/// Whether `pc` is the target of a backward branch of `g`. A prefix stops there: it could
/// only run the loop's first iteration, and a path that goes on into the loop would have
/// done that work for nothing before the real call starts over (mandelbrot's `escape`).
fn loop_header(g: &Function, pc: u32) -> bool {
    g.code
        .iter()
        .enumerate()
        .any(|(at, i)| i.op.is_branch() && i.bc() == pc && pc as usize <= at)
}

/// The internal body's signature: `(ctx, window offset in bytes, caller's depth,
/// non-String parameters…)` returning
/// `(status | own << 32, result cell)`.
pub(crate) fn internal_signature(f: &Function, call_conv: CallConv) -> Signature {
    let mut sig = Signature::new(call_conv);
    sig.params.extend([AbiParam::new(I64); 3]);
    for &t in f.regs.iter().take(usize::from(f.params)) {
        match kind_of(t) {
            Kind::Int => sig.params.push(AbiParam::new(I64)),
            Kind::F32 => sig.params.push(AbiParam::new(F32)),
            Kind::F64 => sig.params.push(AbiParam::new(F64)),
            Kind::Mem => {}
        }
    }
    sig.returns.extend([AbiParam::new(I64); 2]);
    sig
}

/// Builds the public entry of function `s.func`: [`crate::JitFn`]'s `(ctx, regs) -> status`,
/// calling the internal body (`s.self_ref`) with the parameters loaded from the window and
/// the depth from the context, then storing the result cell and ownership bit into the
/// context.
pub(crate) fn entry_wrapper(mut b: FunctionBuilder<'_>, s: &Setup<'_>) -> Result<(), JitError> {
    let f = s
        .module
        .functions
        .get(s.func as usize)
        .ok_or_else(|| JitError::new(Some(s.func), None, "no such function".into()))?;
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let (ctx, regs) = (b.block_params(entry)[0], b.block_params(entry)[1]);
    let depth = b.ins().load(I64, MF, ctx, off::DEPTH);
    let base = b.ins().load(I64, MF, ctx, off::STACK_BASE);
    let regs_off = b.ins().isub(regs, base);
    let mut args = vec![ctx, regs_off, depth];
    for (p, &t) in f.regs.iter().take(usize::from(f.params)).enumerate() {
        let k = kind_of(t);
        if k == Kind::Mem {
            continue;
        }
        let cell = b.ins().load(I64, MF, regs, 8 * p as i32);
        args.push(match k {
            Kind::F64 => b.ins().bitcast(F64, MemFlagsData::new(), cell),
            Kind::F32 => {
                let bits = b.ins().ireduce(I32, cell);
                b.ins().bitcast(F32, MemFlagsData::new(), bits)
            }
            _ => cell,
        });
    }
    // Entered below the native-stack limit (an embedder whose `call_interp` re-enters
    // compiled code there, which the contract rules out), the body would hand itself back to
    // `call_interp` at once: lift the limit for this activation instead, as the limit was
    // checked at call sites before.
    let limit = b.ins().load(I64, MF, ctx, off::NATIVE_LIMIT);
    let sp = b.ins().get_stack_pointer(I64);
    let low = b.ins().icmp(IntCC::UnsignedLessThan, sp, limit);
    let zero = b.ins().iconst(I64, 0);
    let lifted = b.ins().select(low, zero, limit);
    b.ins().store(MF, lifted, ctx, off::NATIVE_LIMIT);
    let call = b.ins().call(s.self_ref, &args);
    let (st_own, v) = (b.inst_results(call)[0], b.inst_results(call)[1]);
    b.ins().store(MF, limit, ctx, off::NATIVE_LIMIT);
    b.ins().store(MF, v, ctx, off::RET);
    let own = b.ins().ushr_imm_u(st_own, 32);
    b.ins().store(MF, own, ctx, off::OWN);
    b.ins().store(MF, depth, ctx, off::DEPTH);
    let st = b.ins().ireduce(I32, st_own);
    b.ins().return_(&[st]);
    b.seal_all_blocks();
    b.finalize(s.frontend);
    Ok(())
}

/// Bytes per element of an array of `s` (`ObjectView` storage: natural width, `boolean` one
/// byte, `char` four).
fn scalar_width(s: Scalar) -> u32 {
    match s {
        Scalar::Bool | Scalar::I8 | Scalar::U8 => 1,
        Scalar::I16 | Scalar::U16 | Scalar::F16 | Scalar::BF16 => 2,
        Scalar::Char | Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
        Scalar::I64 | Scalar::U64 | Scalar::F64 => 8,
    }
}

/// `x / y` for floats (scalars or vectors): `x * (1 / y)` when `y` is a constant power of two,
/// whose reciprocal is exact (`2⁻ᵏ`, normal or subnormal) — both round the same real value
/// `x · 2⁻ᵏ` once, so the results are identical, NaNs and infinities included — else a
/// division (Cranelift keeps `fdiv` by a constant).
pub(crate) fn divide(b: &mut FunctionBuilder<'_>, x: Value, y: Value) -> Value {
    match exact_reciprocal(b, y) {
        Some(r) => b.ins().fmul(x, r),
        None => b.ins().fdiv(x, y),
    }
}

/// `1 / y` as a constant, when `y` is a constant power of two (or a splat of one).
fn exact_reciprocal(b: &mut FunctionBuilder<'_>, y: Value) -> Option<Value> {
    use cranelift_codegen::ir::{InstructionData, Opcode, ValueDef};
    let ValueDef::Result(inst, 0) = b.func.dfg.value_def(y) else {
        return None;
    };
    match b.func.dfg.insts[inst] {
        InstructionData::UnaryIeee32 {
            opcode: Opcode::F32const,
            imm,
        } => {
            let v = f32::from_bits(imm.bits());
            let power_of_two = v.is_normal() && imm.bits() & 0x007f_ffff == 0;
            power_of_two.then(|| b.ins().f32const(1.0 / v))
        }
        InstructionData::UnaryIeee64 {
            opcode: Opcode::F64const,
            imm,
        } => {
            let v = f64::from_bits(imm.bits());
            let power_of_two = v.is_normal() && imm.bits() & 0x000f_ffff_ffff_ffff == 0;
            power_of_two.then(|| b.ins().f64const(1.0 / v))
        }
        InstructionData::Unary {
            opcode: Opcode::Splat,
            arg,
        } => {
            let ty = b.func.dfg.value_type(y);
            let r = exact_reciprocal(b, arg)?;
            Some(b.ins().splat(ty, r))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_opcode_is_classified() {
        // Every opcode either has an explicit arm, a `base.scalar` family, goes to the `xpu`
        // hook, or is device-only.
        for &op in Op::ALL {
            if unsupported(op) || xpu_host(op) {
                continue;
            }
            let m = op.mnemonic();
            let generic = m
                .split_once('.')
                .is_some_and(|(_, s)| suffix_scalar(s).is_some() || s == "ref");
            let explicit = matches!(
                op,
                Op::Nop
                    | Op::Mov
                    | Op::LoadK
                    | Op::LoadI
                    | Op::LoadNull
                    | Op::Jmp
                    | Op::JmpIf
                    | Op::JmpIfNot
                    | Op::Call
                    | Op::Ret
                    | Op::RetOwn
                    | Op::RetVoid
                    | Op::TakeOwn
                    | Op::EqStr
                    | Op::EqRef
                    | Op::LNot
                    | Op::Concat
                    | Op::FmtFixed
                    | Op::Format
                    | Op::ParseInt
                    | Op::Print
                    | Op::StrCount
                    | Op::StrSize
                    | Op::SysTime
                    | Op::SysExit
                    | Op::NewArr
                    | Op::ArrLen
                    | Op::NewObj
                    | Op::GetField
                    | Op::SetField
                    | Op::ChkObj
                    | Op::GetStatic
                    | Op::SetStatic
                    | Op::Drop
                    | Op::ArrOwnGet
                    | Op::ArrOwnSet
                    | Op::ArrOwnTake
            ) || m.starts_with("cvt.");
            assert!(generic || explicit, "`{m}` has no lowering");
        }
    }

    fn function(regs: Vec<Type>, code: Vec<Instr>) -> Function {
        let host = cajeta_bytecode::FnKind::Host;
        crate::test_function::function(host, (1, Some(Type::I64)), regs, code)
    }

    #[test]
    fn partial_inlining_needs_a_pure_forward_path_to_a_return() {
        let m = Module::default();
        let regs = vec![Type::I64, Type::I64, Type::BOOL, Type::I64];
        // fib's shape: `if (n < 2) return n;` before the calls.
        let leaf = vec![
            Instr::with_bc(Op::LoadI, 1, 2),
            Instr::new(Op::LtI64, 2, 0, 1),
            Instr::with_bc(Op::JmpIfNot, 2, 4),
            Instr::new(Op::Ret, 0, 0, 0),
            Instr::new(Op::Call, 3, 1, 0),
            Instr::new(Op::Ret, 3, 0, 0),
        ];
        assert!(fast_exit(&m, &function(regs.clone(), leaf.clone())));
        // A call first: no path without it.
        let mut call_first = leaf.clone();
        call_first.insert(0, Instr::new(Op::Call, 3, 1, 0));
        for i in &mut call_first {
            if i.op.is_branch() {
                i.set_bc(i.bc() + 1);
            }
        }
        assert!(!fast_exit(&m, &function(regs.clone(), call_first)));
        // The only return after a loop.
        let looping = vec![
            Instr::new(Op::LtI64, 2, 0, 1),
            Instr::with_bc(Op::JmpIf, 2, 0),
            Instr::new(Op::Ret, 0, 0, 0),
        ];
        assert!(!fast_exit(&m, &function(regs.clone(), looping)));
        // A String register (it lives in a window the prefix does not have).
        let mut strings = regs;
        strings.push(Type::Str);
        assert!(!fast_exit(&m, &function(strings, leaf)));
        // A division is pure; whether it can fail is settled at the site.
        let div = Instr::new(Op::DivI64, 1, 0, 1);
        assert!(prefix_op(&m, div) && !pure_total(&m, div));
    }

    #[test]
    fn the_xpu_host_api_goes_to_its_hook_and_device_code_is_refused() {
        for op in [Op::BufNew, Op::StreamSync, Op::Launch, Op::DeviceForce] {
            assert!(xpu_host(op) && !unsupported(op), "{}", op.mnemonic());
        }
        for op in [Op::Geom, Op::Barrier, Op::DevGetF32] {
            assert!(unsupported(op) && !xpu_host(op), "{}", op.mnemonic());
        }
        assert!(!unsupported(Op::AddI32) && !xpu_host(Op::AddI32));
        assert!(!unsupported(Op::Print) && !xpu_host(Op::Print));
    }
}
