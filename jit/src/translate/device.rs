//! Kernel bytecode → one Cranelift function per *workgroup* for the CPU backend (see
//! [`crate::device`] for the interface).
//!
//! The function loops over the workgroup's items in increasing linear index (x fastest), the
//! order in which the lane scheduler runs a kernel without rendezvous, and runs the kernel's
//! body for each: registers start as the interpreter's fresh item frame does (parameters from
//! the launch frame, every other register 0), `ret` goes on to the next item. Everything else
//! is the host translator's: the same lowering of every arithmetic instruction, so results are
//! bit-identical to the device interpreter's (the same operations in the same order per item).
//!
//! Device instructions:
//! * `geom` reads the item coordinates (loop variables) and the launch geometry (context);
//! * `ld.*`/`st.*`/`atom.*` address element `i` of memory handle `h` through the context's
//!   [`MemView`](crate::device::MemView) table, with the interpreter's checks: the handle must
//!   name a memory of the access's width (else `E-NULL`-style invalid reference), the index
//!   must be below its length (else `XPU-E-BOUNDS`). A parameter register that holds a buffer
//!   and is never written (and any register only ever written by a `mov` from it) is looked
//!   up once per workgroup; its accesses then only compare the index with the length (a
//!   failed lookup has length 0, so the access's cold path finds and reports the fault).
//!   `--xpu-checks off` drops the index comparisons;
//! * `shared.ref b` is handle `nbufs + b`, as in the interpreter.
//!
//! **Resumable kernels.** A kernel with rendezvous (barriers, wave collectives) compiles to an
//! *item* function instead, run by the lane scheduler in place of its interpreter: it loads the
//! item's registers from its register file, continues at the start or after the rendezvous
//! `ctx.resume` names, and at the next rendezvous stores every register back and stops
//! *before* the instruction (`STOP_RENDEZVOUS`), which the scheduler then has its interpreter
//! execute — so a rendezvous means exactly what it means on the scheduler, with compiled code
//! between them.
//!
//! **Lockstep kernels.** A kernel without rendezvous may instead run its items `W` at a time,
//! each instruction for every lane before the next ([`super::lockstep`]); the lanes that leave
//! lockstep (divergent branches, faults) finish in the kernel's *item* function, which then
//! continues at the points lockstep code leaves lanes at (`ctx.resume = k + 1`: pc
//! `resume[k]`).
//!
//! `@Device` calls are inlined before translation (`crate::flatten`); a kernel whose callees
//! contain a rendezvous is not compiled (it stays on the lane scheduler).

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{AtomicRmwOp, Block, BlockArg, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::{FunctionBuilder, Variable};

use cajeta_bytecode::{Function, Instr, Op, Scalar, Type};

use super::{
    declare_vars, fault_and_blocks, kind_of, leaders, suffix_scalar, Kind, ObjectMem, Setup, Tr,
    F32, I32, I64, MF,
};
use crate::device::{off as doff, FAULT_BAD_HANDLE, FAULT_BOUNDS, FAULT_INDEX, STOP_RENDEZVOUS};
use crate::liveness::Regs;
use crate::JitError;

/// The kernel-specific state of the translator.
pub(crate) struct DevState {
    /// Where `ret` goes: the next item.
    latch: Block,
    /// Item coordinates and linear index, and the lane id (`lin mod W`) (of the lane being
    /// emitted, in lockstep code).
    pub(super) item: [Variable; 3],
    pub(super) lin: Variable,
    pub(super) lane: Variable,
    /// Per register: the (address, length) variables of a buffer parameter looked up once.
    views: Vec<Option<(Variable, Variable)>>,
    /// Index checks on (`--xpu-checks on`).
    checks: bool,
    /// The cold fault paths of device accesses, filled at the end.
    faults: Vec<DevFault>,
    /// The continuation points of an item function: `ctx.resume = k + 1` continues at pc
    /// `resume[k]`, 0 at the start.
    resume: Vec<u32>,
    /// The lanes of a lockstep workgroup function (see [`super::lockstep`]).
    pub(super) lockstep: Option<super::lockstep::Lanes>,
}

/// What a kernel is compiled to.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Shape<'a> {
    /// A workgroup function running the items one after another.
    Workgroup,
    /// A workgroup function running the items `width` at a time in lockstep
    /// ([`super::lockstep`]); with `resume`, one group of a kernel with barriers, resumable
    /// at those continuation points.
    Lockstep {
        width: usize,
        resume: Option<&'a [u32]>,
    },
    /// An item function: starts, or continues at `resume[k - 1]` for `ctx.resume = k`; stops
    /// before each rendezvous (whose next pc must be a continuation point).
    Item { resume: &'a [u32] },
    /// A lockstep workgroup function of `width` lanes held in vectors ([`super::simd`]), for
    /// a kernel `plan` accepted; with `resume`, a resumable group function as for
    /// `Lockstep`; which of its functions, `variant` says.
    Simd {
        width: usize,
        plan: &'a super::SimdPlan,
        resume: Option<&'a [u32]>,
        variant: super::SimdVariant,
    },
}

/// Translates kernel `s.func` into a function `(ctx) -> status` of the given shape (see the
/// module documentation). An instruction this path does not compile is an `Err`: the kernel
/// then runs on the lane scheduler.
pub(crate) fn translate_kernel(
    b: FunctionBuilder<'_>,
    s: &Setup<'_>,
    checks: bool,
    shape: Shape<'_>,
) -> Result<(), JitError> {
    let f = s
        .module
        .functions
        .get(s.func as usize)
        .ok_or_else(|| JitError::new(Some(s.func), None, "no such function".into()))?;
    if let Some((pc, i)) = f.code.iter().enumerate().find(|(_, i)| !compiled(i.op)) {
        return Err(JitError::new(
            Some(s.func),
            Some(pc as u32),
            format!("`{}` is not compiled for the cpu backend", i.op.mnemonic()),
        ));
    }
    if let Shape::Simd {
        width,
        plan,
        resume,
        variant,
    } = shape
    {
        return super::simd::translate_simd(b, s, f, plan, (width, resume, variant), checks);
    }
    let mut tr = Tr::kernel_prologue(b, s, f, checks, shape);
    tr.body()?;
    tr.lockstep_epilogue();
    tr.kernel_epilogue();
    tr.b.seal_all_blocks();
    tr.b.finalize(s.frontend);
    Ok(())
}

/// Whether the compiled path handles `op` in a kernel (everything the device runs except
/// calls; rendezvous by stopping before them).
fn compiled(op: Op) -> bool {
    op != Op::Call
}

/// Whether `op` is a rendezvous: a barrier or a wave collective.
pub(crate) fn rendezvous(op: Op) -> bool {
    let m = op.mnemonic();
    m.starts_with("barrier") || m.starts_with("wave.")
}

/// The pcs of the rendezvous instructions of `f`, in order (resume point `k + 1` continues
/// after the `k`th); empty for a kernel compiled to a workgroup function.
pub fn rendezvous_sites(f: &Function) -> Vec<u32> {
    (0..f.code.len() as u32)
        .filter(|&pc| rendezvous(f.code[pc as usize].op))
        .collect()
}

/// The launch values a kernel function's entry reads from its context.
pub(super) struct Launch {
    /// The context (the function's parameter).
    pub ctx: Value,
    /// Items per workgroup per axis.
    pub block: [Value; 3],
    /// The memory table and its length.
    pub mems: Value,
    pub nmems: Value,
    /// The launch frame's parameter cells.
    pub cells: Vec<Value>,
}

/// Starts a kernel function `(ctx) -> status` whose kernel has `params` parameters: its entry
/// block, and the launch values. Other launch values are loaded where they are used (the
/// context stays in a register), which keeps the machine registers for the kernel's own values.
pub(super) fn kernel_entry(b: &mut FunctionBuilder<'_>, params: u16) -> Launch {
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let ctx = b.block_params(entry)[0];
    let load = |b: &mut FunctionBuilder<'_>, offset: i32| b.ins().load(I64, MF, ctx, offset);
    let block = [0, 1, 2].map(|k| load(b, doff::BLOCK + 8 * k));
    let mems = load(b, doff::MEMS);
    let nmems = load(b, doff::NMEMS);
    let frame = load(b, doff::FRAME);
    let cells = (0..params)
        .map(|p| b.ins().load(I64, MF, frame, 8 * i32::from(p)))
        .collect();
    Launch {
        ctx,
        block,
        mems,
        nmems,
        cells,
    }
}

/// The end of a stop before the rendezvous at `pc` (registers already stored): continuation
/// `k + 1` (after the rendezvous) to `ctx.resume`, the pc to `ctx.stop_pc`, `STOP_RENDEZVOUS`.
pub(super) fn stop_before_rendezvous(b: &mut FunctionBuilder<'_>, ctx: Value, pc: u32, k: usize) {
    let cont = b.ins().iconst(I64, k as i64 + 1);
    b.ins().store(MF, cont, ctx, doff::RESUME);
    let at = b.ins().iconst(I64, i64::from(pc));
    b.ins().store(MF, at, ctx, doff::STOP_PC);
    let stop = b.ins().iconst(I32, i64::from(STOP_RENDEZVOUS));
    b.ins().return_(&[stop]);
}

impl<'a, 'b> Tr<'a, 'b> {
    /// The workgroup function's entry: launch values, the buffer parameters' views, the item
    /// loop around the kernel body.
    fn kernel_prologue(
        mut b: FunctionBuilder<'b>,
        s: &'a Setup<'a>,
        f: &'a Function,
        checks: bool,
        shape: Shape<'_>,
    ) -> Tr<'a, 'b> {
        let resume: &[u32] = match shape {
            Shape::Item { resume }
            | Shape::Lockstep {
                resume: Some(resume),
                ..
            } => resume,
            _ => &[],
        };
        let mut leader = leaders(f);
        // An item function continues at its resume points: each starts a block.
        for &pc in resume {
            if let Some(l) = leader.get_mut(pc as usize) {
                *l = true;
            }
        }
        let Launch {
            ctx,
            block,
            mems,
            nmems,
            cells,
        } = kernel_entry(&mut b, f.params);

        let kinds: Vec<Kind> = f.regs.iter().map(|&t| kind_of(t)).collect();
        let vars = declare_vars(&mut b, &kinds);
        let item = [(); 3].map(|_| b.declare_var(I64));
        let lin = b.declare_var(I64);
        let lane = b.declare_var(I64);
        let own_var = b.declare_var(I64);
        let (fault, blocks) = fault_and_blocks(&mut b, &leader);
        let mem = ObjectMem::new(&mut b);
        let zero = b.ins().iconst(I64, 0);
        let depth = b.declare_var(I64);
        b.def_var(depth, zero);
        let latch = b.create_block();
        let mut tr = Tr {
            s,
            f,
            b,
            kinds,
            vars,
            fuel_var: None,
            ctx,
            regs_off: zero,
            regs_off_cells: zero,
            depth,
            tail: None,
            own_var,
            statics: zero,
            consts: zero,
            blocks,
            fault,
            sigs: Default::default(),
            mem,
            hoisted: Vec::new(),
            deferred: Vec::new(),
            dev: None,
            checked: Vec::new(),
            seen: Vec::new(),
            free_at: Vec::new(),
            sites: Vec::new(),
            promoted: Vec::new(),
            fast: None,
            apart: Vec::new(),
            exits: Vec::new(),
        };
        // The views of buffer parameters never written.
        let mut views = vec![None; f.regs.len()];
        for p in 0..f.params {
            let Some(Type::Buffer(s)) = f.regs.get(usize::from(p)) else {
                continue;
            };
            if written(f, p) {
                continue;
            }
            let (addr, len) = mem_view(&mut tr.b, mems, nmems, cells[usize::from(p)], s.size());
            let (va, vl) = (tr.b.declare_var(I64), tr.b.declare_var(I64));
            tr.b.def_var(va, addr);
            tr.b.def_var(vl, len);
            views[usize::from(p)] = Some((va, vl));
        }
        // Copies of such a parameter (`mov r, p`, as for-each over a buffer makes) share its
        // view when nothing else writes them. (A copy read before its `mov` would read 0 in
        // the interpreter; the compiler never emits such a read.)
        for r in f.params..f.regs.len() as u16 {
            if !matches!(f.regs.get(usize::from(r)), Some(Type::Buffer(_))) {
                continue;
            }
            let mut sources = f
                .code
                .iter()
                .filter(|i| crate::loops::writes(i, r))
                .map(|i| (i.op == Op::Mov).then_some(i.b));
            let first = sources.next().flatten();
            if let Some(p) = first.filter(|_| sources.all(|s| s == first)) {
                if let Some(v) = views.get(usize::from(p)).copied().flatten() {
                    views[usize::from(r)] = Some(v);
                }
            }
        }
        tr.dev = Some(DevState {
            latch,
            item,
            lin,
            lane,
            views,
            checks,
            faults: Vec::new(),
            resume: resume.to_vec(),
            lockstep: None,
        });
        match shape {
            Shape::Item { .. } => {
                tr.item_prologue(latch);
                return tr;
            }
            Shape::Lockstep { width, resume } => {
                tr.lockstep_prologue(width, resume, block, &cells, latch);
                return tr;
            }
            // Translated by `translate_simd` instead.
            Shape::Workgroup | Shape::Simd { .. } => {}
        }

        // The item loop, from item `ctx.lin` (0 for a whole workgroup; a lockstep kernel's
        // embedder may hand the rest of a workgroup over from elsewhere); none at or past the
        // end.
        let first = tr.ctx_load(doff::LIN);
        let wave = tr.ctx_load(doff::WAVE);
        let xy = tr.b.ins().imul(block[0], block[1]);
        let total = tr.b.ins().imul(xy, block[2]);
        let coords = tr.b.create_block();
        let start = tr.b.create_block();
        let exit = tr.b.create_block();
        let none =
            tr.b.ins()
                .icmp(IntCC::UnsignedGreaterThanOrEqual, first, total);
        tr.b.ins().brif(none, exit, &[], coords, &[]);
        tr.b.switch_to_block(coords);
        let b = &mut tr.b;
        let [x, y, z] = super::lockstep::item_coords(b, first, block);
        let l = b.ins().urem(first, wave);
        for (v, value) in item.iter().chain([&lin, &lane]).zip([x, y, z, first, l]) {
            b.def_var(*v, value);
        }
        b.ins().jump(start, &[]);

        // Each item starts with the interpreter's fresh frame.
        tr.b.switch_to_block(start);
        for r in 0..f.regs.len() {
            let r = r as u16;
            let v = match cells.get(usize::from(r)) {
                Some(&cell) => tr.value_of(tr.kind(r), cell),
                None => match tr.kind(r) {
                    Kind::F64 => tr.b.ins().f64const(0.0),
                    Kind::F32 => tr.b.ins().f32const(0.0),
                    _ => zero,
                },
            };
            tr.set(r, v);
        }
        match tr.blocks.first().copied().flatten() {
            Some(first) => {
                tr.b.ins().jump(first, &[]);
            }
            None => {
                tr.b.ins().jump(latch, &[]);
            }
        }

        // The latch: the next item in linear order, or the end of the workgroup.
        tr.b.switch_to_block(latch);
        let block = [0, 1, 2].map(|k| tr.ctx_load(doff::BLOCK + 8 * k));
        let wave = tr.ctx_load(doff::WAVE);
        let b = &mut tr.b;
        let xy = b.ins().imul(block[0], block[1]);
        let total = b.ins().imul(xy, block[2]);
        let next = b.use_var(lin);
        let next = b.ins().iadd_imm_s(next, 1);
        b.def_var(lin, next);
        let done = b.ins().icmp(IntCC::Equal, next, total);
        let step = b.create_block();
        b.ins().brif(done, exit, &[], step, &[]);
        b.switch_to_block(step);
        // x + 1, carrying into y and z.
        let x = b.use_var(item[0]);
        let x = b.ins().iadd_imm_s(x, 1);
        let wrap_x = b.ins().icmp(IntCC::Equal, x, block[0]);
        let x = b.ins().select(wrap_x, zero, x);
        b.def_var(item[0], x);
        let y = b.use_var(item[1]);
        let y1 = b.ins().iadd_imm_s(y, 1);
        let y = b.ins().select(wrap_x, y1, y);
        let wrap_y = b.ins().icmp(IntCC::Equal, y, block[1]);
        let y = b.ins().select(wrap_y, zero, y);
        b.def_var(item[1], y);
        let z = b.use_var(item[2]);
        let z1 = b.ins().iadd_imm_s(z, 1);
        let z = b.ins().select(wrap_y, z1, z);
        b.def_var(item[2], z);
        let l = b.use_var(lane);
        let l = b.ins().iadd_imm_s(l, 1);
        let wrap_l = b.ins().icmp(IntCC::Equal, l, wave);
        let l = b.ins().select(wrap_l, zero, l);
        b.def_var(lane, l);
        b.ins().jump(start, &[]);

        b.switch_to_block(exit);
        let ok = b.ins().iconst(I32, 0);
        b.ins().return_(&[ok]);
        tr
    }

    /// The rest of an item function's entry: the item's coordinates and registers from the
    /// context, then on to the start or to the continuation `ctx.resume` names; `ret` (the
    /// `latch`) returns 0.
    fn item_prologue(&mut self, latch: Block) {
        let Some(d) = &self.dev else {
            return;
        };
        let (item, lin, lane) = (d.item, d.lin, d.lane);
        let points = d.resume.clone();
        for (k, v) in item.iter().enumerate() {
            let x = self.ctx_load(doff::ITEM + 8 * k as i32);
            self.b.def_var(*v, x);
        }
        let x = self.ctx_load(doff::LIN);
        self.b.def_var(lin, x);
        let x = self.ctx_load(doff::LANE);
        self.b.def_var(lane, x);
        // Each continuation loads the registers live there (the others are written before
        // they are read).
        let live = crate::liveness::live_in(self.f);
        let regs = self.ctx_load(doff::REGS);
        let load = |tr: &mut Self, live: &Regs| {
            for r in 0..tr.f.regs.len() as u16 {
                if live.contains(r) {
                    let cell = tr.b.ins().load(I64, MF, regs, 8 * i32::from(r));
                    let v = tr.value_of(tr.kind(r), cell);
                    tr.set(r, v);
                }
            }
        };
        // An item starts from its register file too (the scheduler's fresh frame).
        let none = Regs::default();
        let at_start = live.first().unwrap_or(&none).clone();
        self.continue_at(&points, latch, &live, load, |tr| load(tr, &at_start));
        self.b.switch_to_block(latch);
        let done = self.b.ins().iconst(I32, 0);
        self.b.ins().return_(&[done]);
    }

    /// Jumps to the continuation `ctx.resume` names (`k`: the block of `points[k - 1]`; 0: the
    /// first block, or `empty` for empty code), each way through `load` of the registers `live`
    /// there, or, for the start, through `start`.
    pub(super) fn continue_at(
        &mut self,
        points: &[u32],
        empty: Block,
        live: &[Regs],
        mut load: impl FnMut(&mut Self, &Regs),
        start: impl FnOnce(&mut Self),
    ) {
        let none = Regs::default();
        let live_at = |pc: u32| live.get(pc as usize).unwrap_or(&none);
        let resume = self.ctx_load(doff::RESUME);
        for (k, &pc) in points.iter().enumerate() {
            let Some(cont) = self.blocks.get(pc as usize).copied().flatten() else {
                continue;
            };
            let here = self.b.ins().icmp_imm_s(IntCC::Equal, resume, k as i64 + 1);
            let (loads, next) = (self.b.create_block(), self.b.create_block());
            self.b.ins().brif(here, loads, &[], next, &[]);
            self.b.switch_to_block(loads);
            load(self, live_at(pc));
            self.b.ins().jump(cont, &[]);
            self.b.switch_to_block(next);
        }
        start(self);
        let first = self.blocks.first().copied().flatten().unwrap_or(empty);
        self.b.ins().jump(first, &[]);
    }

    /// Stops a resumable item before the rendezvous at `pc`: every register to the register
    /// file, the continuation and the pc to the context, then `STOP_RENDEZVOUS`.
    fn stop_at_rendezvous(&mut self, pc: u32) -> Result<(), JitError> {
        let Some(d) = &self.dev else {
            return Err(self.err(pc, "rendezvous outside a kernel".into()));
        };
        let Some(k) = d.resume.iter().position(|&r| r == pc + 1) else {
            return Err(self.err(pc, "no continuation after this rendezvous".into()));
        };
        // The registers live at the rendezvous: what the interpreter reads executing it, and
        // what the continuation after it loads.
        let live = crate::liveness::live_in(self.f);
        let regs = self.ctx_load(doff::REGS);
        for r in 0..self.f.regs.len() as u16 {
            if live.get(pc as usize).is_some_and(|l| l.contains(r)) {
                let cell = self.get_cell(r);
                self.b.ins().store(MF, cell, regs, 8 * i32::from(r));
            }
        }
        stop_before_rendezvous(&mut self.b, self.ctx, pc, k);
        Ok(())
    }

    /// Fills the fault exit: the status, pc and item into the context's fault record, then
    /// return the status.
    fn kernel_epilogue(&mut self) {
        let Some(d) = &mut self.dev else {
            return;
        };
        let (item, lin) = (d.item, d.lin);
        let faults = std::mem::take(&mut d.faults);
        let ctx = self.ctx;
        for f in faults {
            self.b.switch_to_block(f.block);
            let mems = self.ctx_load(doff::MEMS);
            let nmems = self.ctx_load(doff::NMEMS);
            let b = &mut self.b;
            let status = match f.index {
                // `chk.idx`: the handle is the length.
                Some(index) if f.width == INDEX_CHECK => {
                    b.ins().store(MF, index, ctx, doff::FAULT_INDEX);
                    b.ins().store(MF, f.handle, ctx, doff::FAULT_LEN);
                    b.ins().iconst(I32, i64::from(FAULT_INDEX))
                }
                Some(index) => {
                    // Out of bounds if the handle names a memory of the access's width; an
                    // invalid reference otherwise (the hoisted lookup gave length 0).
                    let (_, _, ok) = lookup(b, mems, nmems, f.handle, f.width, f.width != 0);
                    let bounds = b.ins().iconst(I32, i64::from(FAULT_BOUNDS));
                    let bad = b.ins().iconst(I32, i64::from(FAULT_BAD_HANDLE));
                    b.ins().store(MF, index, ctx, doff::FAULT_INDEX);
                    b.ins().select(ok, bounds, bad)
                }
                None => b.ins().iconst(I32, i64::from(FAULT_BAD_HANDLE)),
            };
            b.ins().store(MF, f.handle, ctx, doff::FAULT_HANDLE);
            let reg = b.ins().iconst(I32, i64::from(f.reg));
            b.ins().store(MF, reg, ctx, doff::FAULT_REG);
            let pc = b.ins().iconst(I32, i64::from(f.pc));
            b.ins()
                .jump(self.fault, &[BlockArg::Value(status), BlockArg::Value(pc)]);
        }
        let fault = self.fault;
        let ctx = self.ctx;
        let b = &mut self.b;
        b.switch_to_block(fault);
        let st = b.block_params(fault)[0];
        let pc = b.block_params(fault)[1];
        b.ins().store(MF, st, ctx, doff::FAULT_STATUS);
        b.ins().store(MF, pc, ctx, doff::FAULT_PC);
        for (k, v) in item.iter().enumerate() {
            let x = b.use_var(*v);
            b.ins()
                .istore32(MF, x, ctx, doff::FAULT_ITEM + 4 * k as i32);
        }
        let l = b.use_var(lin);
        b.ins().istore32(MF, l, ctx, doff::FAULT_LANE);
        b.ins().return_(&[st]);
    }

    /// The device instructions and `ret` of a kernel; `None` for the instructions the host
    /// lowering handles. `Some(true)` ends the block.
    pub(super) fn device_instr(&mut self, pc: u32, i: Instr) -> Result<Option<bool>, JitError> {
        if self.at_group_level() {
            return self.lockstep_instr(pc, i).map(Some);
        }
        let m = i.op.mnemonic();
        if rendezvous(i.op) {
            self.stop_at_rendezvous(pc)?;
            return Ok(Some(true));
        }
        match i.op {
            Op::RetVoid | Op::Ret => {
                let latch = self.dev.as_ref().map(|d| d.latch);
                if let Some(latch) = latch {
                    self.b.ins().jump(latch, &[]);
                }
                return Ok(Some(true));
            }
            Op::Geom => {
                let v = self.geom(pc, i.b)?;
                self.set(i.a, v);
            }
            Op::SharedRef => {
                let nbufs = self.ctx_load(doff::NBUFS);
                let v = self.b.ins().iadd_imm_s(nbufs, i64::from(i.b));
                self.set(i.a, v);
            }
            Op::BufLength => {
                let (_, len) = self.element(pc, i.b, None, 0, false)?;
                self.set(i.a, len);
            }
            _ if m.starts_with("ld.") => {
                let s = scalar_of(m).ok_or_else(|| self.err(pc, format!("bad load `{m}`")))?;
                let idx = self.get(i.c);
                let (addr, _) = self.element(pc, i.b, Some(idx), s.size(), true)?;
                let ty = self.var_type(i.a);
                let v = match s {
                    Scalar::F64 | Scalar::F32 => self.b.ins().load(ty, MF, addr, 0),
                    Scalar::I64 | Scalar::U64 => self.b.ins().load(I64, MF, addr, 0),
                    Scalar::Bool | Scalar::U8 => self.b.ins().uload8(I64, MF, addr, 0),
                    Scalar::I8 => self.b.ins().sload8(I64, MF, addr, 0),
                    Scalar::I16 => self.b.ins().sload16(I64, MF, addr, 0),
                    Scalar::U16 | Scalar::F16 | Scalar::BF16 => {
                        self.b.ins().uload16(I64, MF, addr, 0)
                    }
                    Scalar::I32 => self.b.ins().sload32(MF, addr, 0),
                    Scalar::Char | Scalar::U32 => self.b.ins().uload32(MF, addr, 0),
                };
                self.set(i.a, v);
            }
            _ if m.starts_with("st.") || m.starts_with("atom.") => {
                let addr = self.access_address(pc, i)?;
                self.access(pc, i, addr)?;
            }
            // A run-time index into a dynamic shared array or a vector: 0 <= r[a] < r[b].
            Op::CheckIndex => {
                let (index, len) = (self.get(i.a), self.get(i.b));
                let b = &mut self.b;
                let below = b.ins().icmp_imm_s(IntCC::SignedLessThan, index, 0);
                let above = b.ins().icmp(IntCC::SignedGreaterThanOrEqual, index, len);
                let outside = b.ins().bor(below, above);
                let fail = self.dev_fault_block(pc, i.c, len, Some(index), INDEX_CHECK);
                let good = self.b.create_block();
                self.b.ins().brif(outside, fail, &[], good, &[]);
                self.b.switch_to_block(good);
            }
            // Attributes are read by the backend; a fence orders this item's own accesses.
            Op::KernelAttr => {}
            Op::Fence => {
                self.b.ins().fence();
            }
            _ => return Ok(None),
        }
        Ok(Some(false))
    }

    /// The element address of store or atomic `i` (the checks of [`Tr::element`]): the
    /// first half of the access, which lockstep code runs for every lane before any lane's
    /// second half, [`Tr::access`].
    pub(super) fn access_address(&mut self, pc: u32, i: Instr) -> Result<Value, JitError> {
        let m = i.op.mnemonic();
        let s = scalar_of(m).ok_or_else(|| self.err(pc, format!("bad access `{m}`")))?;
        let (handle, index) = if m.starts_with("st.") {
            (i.a, i.b)
        } else {
            (i.b, i.c)
        };
        let idx = self.get(index);
        Ok(self.element(pc, handle, Some(idx), s.size(), true)?.0)
    }

    /// The memory effect of store or atomic `i` at `addr` (from [`Tr::access_address`]).
    pub(super) fn access(&mut self, pc: u32, i: Instr, addr: Value) -> Result<(), JitError> {
        let m = i.op.mnemonic();
        let s = scalar_of(m).ok_or_else(|| self.err(pc, format!("bad access `{m}`")))?;
        match m.split('.').next() {
            Some("st") => match self.kind(i.c) {
                Kind::F64 | Kind::F32 => {
                    let x = self.get(i.c);
                    self.b.ins().store(MF, x, addr, 0);
                }
                _ => {
                    let v = self.get(i.c);
                    match s.size() {
                        1 => self.b.ins().istore8(MF, v, addr, 0),
                        2 => self.b.ins().istore16(MF, v, addr, 0),
                        4 => self.b.ins().istore32(MF, v, addr, 0),
                        _ => self.b.ins().store(MF, v, addr, 0),
                    };
                }
            },
            _ => {
                let v = self.get(i.a);
                let old = match m.split('.').nth(1) {
                    Some("add") => self.atomic_add(s, addr, v),
                    Some("cas") => {
                        let desired = self.get(i.a + 1);
                        self.atomic_cas(s, addr, v, desired)
                    }
                    Some(kind @ ("min" | "max")) if s == Scalar::F32 => {
                        self.atomic_fminmax(kind == "min", addr, v)
                    }
                    Some(kind) => {
                        let op = atomic_op(kind, s)
                            .ok_or_else(|| self.err(pc, format!("unknown atomic `{m}`")))?;
                        self.atomic_rmw(s, op, addr, v)
                    }
                    None => return Err(self.err(pc, format!("bad atomic `{m}`"))),
                };
                self.set(i.a, old);
            }
        }
        Ok(())
    }

    /// `geom b`: the item coordinates (0-2), workgroup (3-5), block size (6-8), global ids
    /// (9-11, wrapping as uint32), grid (12-14), wave width (15), lane id (16).
    fn geom(&mut self, pc: u32, sel: u16) -> Result<Value, JitError> {
        let Some(d) = &self.dev else {
            return Err(self.err(pc, "geom outside a kernel".into()));
        };
        let (item, lane) = (d.item, d.lane);
        let axis = sel % 3;
        let field = |base: i32| base + 8 * i32::from(axis);
        let axis = usize::from(axis);
        Ok(match sel {
            0..=2 => self.b.use_var(item[axis]),
            3..=5 => self.ctx_load(field(doff::GROUP)),
            6..=8 => self.ctx_load(field(doff::BLOCK)),
            9..=11 => {
                let group = self.ctx_load(field(doff::GROUP));
                let block = self.ctx_load(field(doff::BLOCK));
                let b = &mut self.b;
                let t = b.use_var(item[axis]);
                let g = b.ins().imul(group, block);
                let v = b.ins().iadd(g, t);
                let v = b.ins().ireduce(I32, v);
                b.ins().uextend(I64, v)
            }
            12..=14 => self.ctx_load(field(doff::GRID)),
            15 => self.ctx_load(doff::WAVE),
            16 => self.b.use_var(lane),
            _ => return Err(self.err(pc, format!("unknown geometry selector {sel}"))),
        })
    }

    /// The address of element `index` (none: the memory's length only) of the memory whose
    /// handle register `reg` holds, for an access of `width` bytes, and the memory's length;
    /// the checks of the module documentation branch to a cold block that records the fault.
    fn element(
        &mut self,
        pc: u32,
        reg: u16,
        index: Option<Value>,
        width: usize,
        typed: bool,
    ) -> Result<(Value, Value), JitError> {
        let Some(d) = &self.dev else {
            return Err(self.err(pc, "device memory outside a kernel".into()));
        };
        let checks = d.checks;
        let view = d.views.get(usize::from(reg)).copied().flatten();
        let handle = self.get(reg);
        let (base, len) = match view {
            Some((va, vl)) => (self.b.use_var(va), self.b.use_var(vl)),
            None => {
                let mems = self.ctx_load(doff::MEMS);
                let nmems = self.ctx_load(doff::NMEMS);
                // (The length as read: only a valid handle gets past the test.)
                let (base, len, ok) = lookup(&mut self.b, mems, nmems, handle, width, typed);
                let fail = self.dev_fault_block(pc, reg, handle, None, width);
                let good = self.b.create_block();
                self.b.ins().brif(ok, good, &[], fail, &[]);
                self.b.switch_to_block(good);
                (base, len)
            }
        };
        let Some(index) = index else {
            return Ok((base, len));
        };
        if checks || view.is_none() {
            // With checks off, a looked-up handle's length still guards (it is 0 when the
            // handle was invalid).
            let outside = self
                .b
                .ins()
                .icmp(IntCC::UnsignedGreaterThanOrEqual, index, len);
            let fail = self.dev_fault_block(pc, reg, handle, Some(index), width);
            let good = self.b.create_block();
            self.b.ins().brif(outside, fail, &[], good, &[]);
            self.b.switch_to_block(good);
        }
        let offset = self.b.ins().imul_imm_s(index, width as i64);
        Ok((self.b.ins().iadd(base, offset), len))
    }

    /// A 64-bit field of the workgroup context.
    pub(super) fn ctx_load(&mut self, offset: i32) -> Value {
        let ctx = self.ctx;
        self.b.ins().load(I64, MF, ctx, offset)
    }

    /// A cold block recording the fault of an access of `width` bytes at `pc` through
    /// handle register `reg` (index `index`, if the access got that far); filled by
    /// [`Tr::kernel_epilogue`].
    fn dev_fault_block(
        &mut self,
        pc: u32,
        reg: u16,
        handle: Value,
        index: Option<Value>,
        width: usize,
    ) -> Block {
        if let Some(bail) = self.lockstep_bail(pc) {
            return bail;
        }
        let block = self.b.create_block();
        self.b.set_cold_block(block);
        if let Some(d) = &mut self.dev {
            d.faults.push(DevFault {
                block,
                pc,
                reg,
                handle,
                index,
                width,
            });
        }
        block
    }

    /// An integer atomic read-modify-write at `addr` (element type `s`, operand the cell `v`),
    /// returning the old element as a canonical cell.
    fn atomic_rmw(&mut self, s: Scalar, op: AtomicRmwOp, addr: Value, v: Value) -> Value {
        if s.size() == 4 {
            let x = self.b.ins().ireduce(I32, v);
            let old = self.b.ins().atomic_rmw(I32, MF, op, addr, x);
            self.extend32(s, old)
        } else {
            self.b.ins().atomic_rmw(I64, MF, op, addr, v)
        }
    }

    /// `atom.cas`: stores `desired` iff the element equals `expected`; the old element.
    fn atomic_cas(&mut self, s: Scalar, addr: Value, expected: Value, desired: Value) -> Value {
        if s.size() == 4 {
            let e = self.b.ins().ireduce(I32, expected);
            let d = self.b.ins().ireduce(I32, desired);
            let old = self.b.ins().atomic_cas(MF, addr, e, d);
            self.extend32(s, old)
        } else {
            self.b.ins().atomic_cas(MF, addr, expected, desired)
        }
    }

    /// A 32-bit element as the canonical cell of `s`.
    fn extend32(&mut self, s: Scalar, x: Value) -> Value {
        if s.is_signed() {
            self.b.ins().sextend(I64, x)
        } else {
            self.b.ins().uextend(I64, x)
        }
    }

    /// float32 `atomicMin`/`atomicMax` (minNum/maxNum, the host JIT's `fminmax`) as a
    /// compare-and-swap loop on the bits, as the interpreter; the old value.
    fn atomic_fminmax(&mut self, min: bool, addr: Value, v: Value) -> Value {
        let head = self.b.create_block();
        self.b.append_block_param(head, I32);
        let done = self.b.create_block();
        self.b.append_block_param(done, F32);
        let first = self.b.ins().atomic_load(I32, MF, addr);
        self.b.ins().jump(head, &[BlockArg::Value(first)]);
        self.b.switch_to_block(head);
        let old = self.b.block_params(head)[0];
        let oldf = self.b.ins().bitcast(F32, MemFlagsData::new(), old);
        let r = self.fminmax(min, oldf, v);
        let new = self.b.ins().bitcast(I32, MemFlagsData::new(), r);
        let seen = self.b.ins().atomic_cas(MF, addr, old, new);
        let same = self.b.ins().icmp(IntCC::Equal, seen, old);
        self.b.ins().brif(
            same,
            done,
            &[BlockArg::Value(oldf)],
            head,
            &[BlockArg::Value(seen)],
        );
        self.b.switch_to_block(done);
        self.b.block_params(done)[0]
    }

    /// The atomic `element += v` at `addr` for elements of `s`, returning the old value as
    /// the register's value (a compare-and-swap loop for float32, as the interpreter's).
    fn atomic_add(&mut self, s: Scalar, addr: Value, v: Value) -> Value {
        let b = &mut self.b;
        match s {
            Scalar::F32 => {
                let head = b.create_block();
                b.append_block_param(head, I32);
                let done = b.create_block();
                b.append_block_param(done, F32);
                let first = b.ins().atomic_load(I32, MF, addr);
                b.ins().jump(head, &[BlockArg::Value(first)]);
                b.switch_to_block(head);
                let old = b.block_params(head)[0];
                let oldf = b.ins().bitcast(F32, MemFlagsData::new(), old);
                let sum = b.ins().fadd(oldf, v);
                let new = b.ins().bitcast(I32, MemFlagsData::new(), sum);
                let seen = b.ins().atomic_cas(MF, addr, old, new);
                let same = b.ins().icmp(IntCC::Equal, seen, old);
                b.ins().brif(
                    same,
                    done,
                    &[BlockArg::Value(oldf)],
                    head,
                    &[BlockArg::Value(seen)],
                );
                b.switch_to_block(done);
                b.block_params(done)[0]
            }
            Scalar::I32 | Scalar::U32 => {
                let x = b.ins().ireduce(I32, v);
                let old = b.ins().atomic_rmw(I32, MF, AtomicRmwOp::Add, addr, x);
                if s == Scalar::I32 {
                    b.ins().sextend(I64, old)
                } else {
                    b.ins().uextend(I64, old)
                }
            }
            _ => b.ins().atomic_rmw(I64, MF, AtomicRmwOp::Add, addr, v),
        }
    }
}

/// The read-modify-write operation of an integer atomic (`atom.<kind>.<s>`).
fn atomic_op(kind: &str, s: Scalar) -> Option<AtomicRmwOp> {
    let signed = s.is_signed();
    Some(match kind {
        "sub" => AtomicRmwOp::Sub,
        "and" => AtomicRmwOp::And,
        "or" => AtomicRmwOp::Or,
        "xor" => AtomicRmwOp::Xor,
        "xchg" => AtomicRmwOp::Xchg,
        "min" if signed => AtomicRmwOp::Smin,
        "max" if signed => AtomicRmwOp::Smax,
        "min" => AtomicRmwOp::Umin,
        "max" => AtomicRmwOp::Umax,
        _ => return None,
    })
}

/// The `width` of a [`DevFault`] that is a failed `chk.idx` (its `handle` is the length).
const INDEX_CHECK: usize = usize::MAX;

/// A device access's cold fault path, filled at the end.
pub(crate) struct DevFault {
    block: Block,
    pc: u32,
    reg: u16,
    handle: Value,
    index: Option<Value>,
    width: usize,
}

/// The element type of a `ld.T`/`st.T`/`atom.add.T` mnemonic.
fn scalar_of(mnemonic: &str) -> Option<Scalar> {
    mnemonic.rsplit('.').next().and_then(suffix_scalar)
}

/// Whether any instruction of `f` may write register `r`.
fn written(f: &Function, r: u16) -> bool {
    f.code.iter().any(|i| crate::loops::writes(i, r))
}

/// The length `len` of a view [`lookup`] read, or 0 where the handle was not `ok`.
fn checked_len(b: &mut FunctionBuilder<'_>, len: Value, ok: Value) -> Value {
    let zero = b.ins().iconst(I64, 0);
    b.ins().select(ok, len, zero)
}

/// Reads the [`MemView`](crate::device::MemView) of `handle`: its element address and
/// length, and whether the handle names a memory (of `width`-byte elements, when `typed`).
/// An invalid handle reads entry 0 (the table is never empty): its length is then not the
/// handle's (see [`checked_len`]), and nothing may be accessed through it.
pub(super) fn lookup(
    b: &mut FunctionBuilder<'_>,
    mems: Value,
    nmems: Value,
    handle: Value,
    width: usize,
    typed: bool,
) -> (Value, Value, Value) {
    use crate::device::off as d;
    let inside = b.ins().icmp(IntCC::UnsignedLessThan, handle, nmems);
    let zero = b.ins().iconst(I64, 0);
    let h = b.ins().select(inside, handle, zero);
    let offset = b.ins().imul_imm_s(h, d::VIEW_SIZE);
    let entry = b.ins().iadd(mems, offset);
    let addr = b.ins().load(I64, MF, entry, d::VIEW_ADDR);
    let len = b.ins().load(I64, MF, entry, d::VIEW_LEN);
    let ok = if typed {
        let w = b.ins().load(I64, MF, entry, d::VIEW_WIDTH);
        let same = b.ins().icmp_imm_s(IntCC::Equal, w, width as i64);
        b.ins().band(inside, same)
    } else {
        inside
    };
    (addr, len, ok)
}

/// The views of `handle` as [`lookup`] reads them, for an access of `width` bytes: address
/// and length (0 when the handle is not a memory of that width).
pub(super) fn mem_view(
    b: &mut FunctionBuilder<'_>,
    mems: Value,
    nmems: Value,
    handle: Value,
    width: usize,
) -> (Value, Value) {
    let (addr, len, ok) = lookup(b, mems, nmems, handle, width, true);
    (addr, checked_len(b, len, ok))
}
