//! Lockstep workgroup functions: the items of a workgroup run `W` at a time ("lanes"), each
//! bytecode instruction for lanes 0, 1, …, W−1 before the next instruction.
//!
//! Why: a grid-stride kernel's item walks its elements one grid apart, so running items one
//! after another touches a new cache line (and, for big grids, a new page) at every access;
//! `W` lanes in lockstep touch `W` neighbouring elements per instruction instead, and the
//! hardware sees streams it can prefetch. XPU §5.5 allows lockstep execution when race-free
//! kernels give identical results: each lane still performs its own operations in its own
//! order (float results are bit-identical), and lanes perform each memory access in increasing
//! item order.
//!
//! Each lane has its own Cranelift variables for every register and its own item
//! coordinates; the translator emits the instruction once per lane with that lane's
//! variables in place. Control flow is shared: a conditional branch on which the lanes agree
//! is one branch; when they disagree (*divergence*), or when a lane would fault, the group
//! **bails out**: every lane's live registers go to its register file (`W` files of `regs + 1`
//! cells from `ctx.regs`; the extra cell holds where the lane continues, as pc + 1) and the
//! function returns [`STOP_BAIL`] with the group in `ctx.lin`. The embedder then finishes the
//! group's lanes one by one, in order, with the kernel's item function (which resumes at any
//! of those continuation points), and calls the lockstep function again for the next group.
//! The lanes of a group so execute, per memory location, in the order the item-by-item
//! schedule would for race-free kernels, and a fault is found by the lane that reaches it
//! first in item order, with that schedule's report.
//!
//! A bail must leave every lane *before* the instruction it stopped at, or after a branch:
//! * stores and atomics compute and check every lane's address first, then perform the
//!   accesses (so no lane has written when a check fails);
//! * other instructions that can fail (loads, integer division) are pure: the registers the
//!   instruction writes are saved before it ("snapshots"), and the bail stores those.
//!
//! Items after the last full group (the block size modulo `W`) are left to the embedder, which
//! runs them with the item function from their start.
//!
//! A kernel with workgroup barriers gets a *group* function instead of the group loop: one
//! group, its lanes' registers loaded from their files (only those live where the group
//! continues), continuing at the start or after a barrier, until every lane stops before the
//! next barrier (registers stored, `STOP_RENDEZVOUS`), returns, or bails out as above. The
//! embedder runs the groups of a workgroup phase by phase (`cpu::compiled::barrier_phases`).

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{Block, InstBuilder, Value};
use cranelift_frontend::{FunctionBuilder, Variable};

use cajeta_bytecode::{Instr, Op};

use super::{declare_vars, Kind, Tr, I32, I64, MF};
use crate::device::{off as doff, STOP_BAIL};
use crate::liveness::{self, Regs};
use crate::loops;
use crate::JitError;

/// One lane's variables: its registers and its item coordinates.
#[derive(Clone)]
struct Lane {
    vars: Vec<Variable>,
    item: [Variable; 3],
    lin: Variable,
    lane: Variable,
}

/// The lockstep state of the translator.
pub(crate) struct Lanes {
    lanes: Vec<Lane>,
    /// The linear index of the group's first item.
    lin0: Variable,
    /// The lane whose instruction is being emitted (`None`: the group's own code).
    current: Option<usize>,
    /// The current instruction's bail-out block, once a lane asked for one.
    pending: Option<Block>,
    /// The current instruction's snapshots: (lane, register, value before the instruction).
    snapshots: Vec<(usize, u16, Value)>,
    /// Bail-out blocks to fill at the end.
    bails: Vec<Bail>,
    /// The registers live at each pc: a bail stores only those.
    live: Vec<Regs>,
    /// A resumable group's continuation points (see [`Tr::lockstep_prologue`]).
    resume: Option<Vec<u32>>,
}

/// A bail-out block: every lane's registers to its file, then `STOP_BAIL`.
struct Bail {
    block: Block,
    pc: u32,
    snapshots: Vec<(usize, u16, Value)>,
    /// After a divergent branch: each lane's condition, and the continuation (pc + 1) of a
    /// lane whose condition is nonzero and of one whose condition is zero. Otherwise every
    /// lane continues at `pc` itself.
    branch: Option<(Vec<Value>, i64, i64)>,
}

impl Tr<'_, '_> {
    /// Whether the translator is at the group level of a lockstep function (an instruction
    /// is dispatched to its lanes from here).
    pub(super) fn at_group_level(&self) -> bool {
        self.lanes().is_some_and(|l| l.current.is_none())
    }

    fn lanes(&self) -> Option<&Lanes> {
        self.dev.as_ref().and_then(|d| d.lockstep.as_ref())
    }

    fn lanes_mut(&mut self) -> Option<&mut Lanes> {
        self.dev.as_mut().and_then(|d| d.lockstep.as_mut())
    }

    /// The bail-out block of the instruction at `pc` when a lane of lockstep code is being
    /// emitted (a failing check goes there instead of to a fault); `None` otherwise.
    pub(super) fn lockstep_bail(&mut self, pc: u32) -> Option<Block> {
        let l = self.lanes()?;
        l.current?;
        if let Some(b) = l.pending {
            return Some(b);
        }
        let block = self.b.create_block();
        self.b.set_cold_block(block);
        let l = self.lanes_mut()?;
        l.pending = Some(block);
        let snapshots = l.snapshots.clone();
        l.bails.push(Bail {
            block,
            pc,
            snapshots,
            branch: None,
        });
        Some(block)
    }

    /// Emits `f` for lane `j`: its variables and coordinates in place of the translator's.
    fn in_lane<T>(&mut self, j: usize, f: impl FnOnce(&mut Self) -> T) -> T {
        let Some(d) = self.dev.as_mut() else {
            return f(self);
        };
        let Some(l) = d.lockstep.as_mut() else {
            return f(self);
        };
        let lane = l.lanes[j].clone();
        l.current = Some(j);
        d.item = lane.item;
        d.lin = lane.lin;
        d.lane = lane.lane;
        self.vars = lane.vars;
        let out = f(self);
        if let Some(l) = self.lanes_mut() {
            l.current = None;
        }
        out
    }

    fn width(&self) -> usize {
        self.lanes().map_or(1, |l| l.lanes.len())
    }

    /// One instruction of a lockstep function (see the module documentation); `true` if it
    /// ends the block.
    pub(super) fn lockstep_instr(&mut self, pc: u32, i: Instr) -> Result<bool, JitError> {
        let m = i.op.mnemonic();
        match i.op {
            Op::JmpIf | Op::JmpIfNot => return self.lockstep_branch(pc, i),
            // Shared control flow: emitted once.
            Op::Jmp | Op::Ret | Op::RetVoid => return self.in_lane(0, |tr| tr.instr(pc, i)),
            // Only barriers reach here (kernels with wave collectives are not run in lockstep).
            _ if super::rendezvous(i.op) => return self.lockstep_rendezvous(pc),
            _ => {}
        }
        let width = self.width();
        self.take_snapshots(pc, i);
        if m.starts_with("st.") || m.starts_with("atom.") {
            let mut addrs = Vec::with_capacity(width);
            for j in 0..width {
                addrs.push(self.in_lane(j, |tr| tr.access_address(pc, i))?);
            }
            for (j, addr) in addrs.into_iter().enumerate() {
                self.in_lane(j, |tr| tr.access(pc, i, addr))?;
            }
        } else {
            for j in 0..width {
                if self.in_lane(j, |tr| tr.instr(pc, i))? {
                    return Err(self.err(pc, "unexpected terminator in lockstep code".into()));
                }
            }
        }
        if let Some(l) = self.lanes_mut() {
            l.pending = None;
            l.snapshots.clear();
        }
        Ok(false)
    }

    /// Saves, for every lane, the live registers `i` (at `pc`) writes: a bail inside `i`
    /// stores these. (Dead ones are left alone: a read of a variable can keep its value alive
    /// around a loop, in an unused block parameter.)
    fn take_snapshots(&mut self, pc: u32, i: Instr) {
        let n = self.f.regs.len() as u16;
        let Some(l) = self.lanes() else {
            return;
        };
        let live = &l.live[pc as usize];
        let written: Vec<u16> = (0..n)
            .filter(|&r| loops::writes(&i, r) && live.contains(r))
            .collect();
        let lanes = l.lanes.clone();
        let mut snapshots = Vec::new();
        for (j, lane) in lanes.iter().enumerate() {
            for &r in &written {
                let v = self.b.use_var(lane.vars[usize::from(r)]);
                snapshots.push((j, r, v));
            }
        }
        if let Some(l) = self.lanes_mut() {
            l.snapshots = snapshots;
        }
    }

    /// `jmpif`/`jmpifnot` in lockstep: one branch when every lane agrees, else a bail-out in
    /// which each lane continues where its own condition leads.
    fn lockstep_branch(&mut self, pc: u32, i: Instr) -> Result<bool, JitError> {
        let width = self.width();
        let conds: Vec<Value> = (0..width)
            .map(|j| self.in_lane(j, |tr| tr.get(i.a)))
            .collect();
        let (mut all, mut any) = (conds[0], conds[0]);
        for &c in &conds[1..] {
            all = self.b.ins().band(all, c);
            any = self.b.ins().bor(any, c);
        }
        let (on_true, on_false) = arms(pc, i, self.block(i.bc())?, self.block(pc + 1)?);
        let mixed = self.b.create_block();
        let bail = self.b.create_block();
        self.b.set_cold_block(bail);
        self.b.ins().brif(all, on_true.0, &[], mixed, &[]);
        self.b.switch_to_block(mixed);
        self.b.ins().brif(any, bail, &[], on_false.0, &[]);
        if let Some(l) = self.lanes_mut() {
            l.bails.push(Bail {
                block: bail,
                pc,
                snapshots: Vec::new(),
                branch: Some((conds, i64::from(on_true.1) + 1, i64::from(on_false.1) + 1)),
            });
        }
        Ok(true)
    }

    /// The entry of a lockstep function, after the common kernel prologue.
    ///
    /// Without `resume`: the group loop from `ctx.lin` while a full group of `width` items
    /// remains, each group's lanes starting with the interpreter's fresh item frame; `ret` (the
    /// `latch`) goes on to the next group. With `resume` (a kernel with barriers): the one group
    /// at `ctx.lin`, each lane's registers from its file, continuing at the start or at
    /// `resume[k - 1]` for `ctx.resume = k`, until every lane stops at the next barrier
    /// ([`STOP_RENDEZVOUS`]) or returns (0).
    pub(super) fn lockstep_prologue(
        &mut self,
        width: usize,
        resume: Option<&[u32]>,
        block: [Value; 3],
        cells: &[Value],
        latch: Block,
    ) {
        let Some(d) = &self.dev else {
            return;
        };
        let live = liveness::live_in(self.f);
        let mut lanes = vec![Lane {
            vars: self.vars.clone(),
            item: d.item,
            lin: d.lin,
            lane: d.lane,
        }];
        for _ in 1..width {
            let vars = declare_vars(&mut self.b, &self.kinds);
            let item = [(); 3].map(|_| self.b.declare_var(I64));
            let (lin, lane) = (self.b.declare_var(I64), self.b.declare_var(I64));
            lanes.push(Lane {
                vars,
                item,
                lin,
                lane,
            });
        }
        let lin0 = self.b.declare_var(I64);
        let first = self.ctx_load(doff::LIN);
        self.b.def_var(lin0, first);
        let head = self.b.create_block();
        let start = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);

        // Another full group? (A resumable group is always full.)
        self.b.switch_to_block(head);
        let l0 = self.b.use_var(lin0);
        if resume.is_some() {
            self.b.ins().jump(start, &[]);
        } else {
            let b = &mut self.b;
            let xy = b.ins().imul(block[0], block[1]);
            let total = b.ins().imul(xy, block[2]);
            let end = b.ins().iadd_imm_s(l0, width as i64);
            let over = b.ins().icmp(IntCC::UnsignedGreaterThan, end, total);
            b.ins().brif(over, exit, &[], start, &[]);
        }

        // Lane 0's coordinates by division, the others' by counting on (x fastest).
        self.b.switch_to_block(start);
        let wave = self.ctx_load(doff::WAVE);
        let b = &mut self.b;
        let [x, y, z] = item_coords(b, l0, block);
        let ln = b.ins().urem(l0, wave);
        let zero = b.ins().iconst(I64, 0);
        let (mut x, mut y, mut z, mut ln) = (x, y, z, ln);
        for (j, lane) in lanes.iter().enumerate() {
            if j > 0 {
                [x, y, z] = carry_coords(b, [x, y, z], block, 1);
                ln = b.ins().iadd_imm_s(ln, 1);
                let wrap_l = b.ins().icmp(IntCC::Equal, ln, wave);
                ln = b.ins().select(wrap_l, zero, ln);
            }
            for (v, value) in lane.item.iter().zip([x, y, z]) {
                b.def_var(*v, value);
            }
            let lin = b.ins().iadd_imm_s(l0, j as i64);
            b.def_var(lane.lin, lin);
            b.def_var(lane.lane, ln);
        }
        let first_block = self.blocks.first().copied().flatten().unwrap_or(latch);
        match resume {
            None => {
                self.fresh_lanes(&lanes, cells);
                self.b.ins().jump(first_block, &[]);
            }
            Some(points) => {
                // Each continuation loads what is live there (a phase of a reduction tree
                // needs a handful of its registers, not all of them); the start is the fresh
                // item frame, as for the group loop (the embedder fills no files for it).
                self.continue_at(
                    points,
                    latch,
                    &live,
                    |tr, live| tr.lanes_from_files(&lanes, live, cells),
                    |tr| tr.fresh_lanes(&lanes, cells),
                );
            }
        }

        self.b.switch_to_block(latch);
        if resume.is_some() {
            // Every lane returned.
            let done = self.b.ins().iconst(I32, 0);
            self.b.ins().return_(&[done]);
        } else {
            next_group(&mut self.b, lin0, width, head);
        }
        self.b.switch_to_block(exit);
        groups_done(&mut self.b, self.ctx, lin0);

        if let Some(d) = self.dev.as_mut() {
            d.lockstep = Some(Lanes {
                lanes,
                lin0,
                current: None,
                pending: None,
                snapshots: Vec::new(),
                bails: Vec::new(),
                live,
                resume: resume.map(<[u32]>::to_vec),
            });
        }
    }

    /// Each lane's registers as the interpreter's fresh item frame: the parameters from the
    /// launch frame's `cells`, every other register 0.
    fn fresh_lanes(&mut self, lanes: &[Lane], cells: &[Value]) {
        let zeros = [
            self.b.ins().iconst(I64, 0),
            self.b.ins().f32const(0.0),
            self.b.ins().f64const(0.0),
        ];
        for lane in lanes {
            for (r, &var) in lane.vars.iter().enumerate() {
                let kind = self.kinds[r];
                let v = match cells.get(r) {
                    Some(&cell) => self.value_of(kind, cell),
                    None => match kind {
                        Kind::F32 => zeros[1],
                        Kind::F64 => zeros[2],
                        Kind::Int | Kind::Mem => zeros[0],
                    },
                };
                self.b.def_var(var, v);
            }
        }
    }

    /// Each lane's registers in `live` from its file at `ctx.regs` (the others are written
    /// before they are read).
    ///
    /// A parameter no instruction writes holds the launch frame's cell in every lane: it comes
    /// from `cells`, one value for all lanes, which keeps one machine register for it rather
    /// than one per lane.
    fn lanes_from_files(&mut self, lanes: &[Lane], live: &Regs, cells: &[Value]) {
        let files = self.ctx_load(doff::REGS);
        let stride = 8 * (self.f.regs.len() as i32 + 1);
        let f = self.f;
        for (j, lane) in lanes.iter().enumerate() {
            for (r, &var) in lane.vars.iter().enumerate() {
                if !live.contains(r as u16) {
                    continue;
                }
                let cell = match cells.get(r) {
                    Some(&cell) if !f.code.iter().any(|i| loops::writes(i, r as u16)) => cell,
                    _ => {
                        let at = stride * j as i32 + 8 * r as i32;
                        self.b.ins().load(I64, MF, files, at)
                    }
                };
                let v = self.value_of(self.kinds[r], cell);
                self.b.def_var(var, v);
            }
        }
    }

    /// A barrier reached by every lane of a resumable group: each lane's live registers to its
    /// file, the continuation after the barrier to `ctx.resume` and the barrier's pc to
    /// `ctx.stop_pc`, then `STOP_RENDEZVOUS` (the embedder has each lane execute it).
    fn lockstep_rendezvous(&mut self, pc: u32) -> Result<bool, JitError> {
        let Some(l) = self.lanes() else {
            return Err(self.err(pc, "rendezvous outside lockstep code".into()));
        };
        let k = l
            .resume
            .as_ref()
            .and_then(|r| r.iter().position(|&c| c == pc + 1))
            .ok_or_else(|| self.err(pc, "no continuation after this rendezvous".into()))?;
        self.store_lanes(pc, &[], None);
        super::device::stop_before_rendezvous(&mut self.b, self.ctx, pc, k);
        Ok(true)
    }

    /// Fills the bail-out blocks: each lane's live registers (as cells) and continuation to
    /// its register file, the group to `ctx.lin`, the pc to `ctx.stop_pc`, then `STOP_BAIL`.
    pub(super) fn lockstep_epilogue(&mut self) {
        let Some(l) = self.lanes_mut() else {
            return;
        };
        let bails = std::mem::take(&mut l.bails);
        let lin0 = l.lin0;
        for bail in bails {
            self.b.switch_to_block(bail.block);
            self.store_lanes(bail.pc, &bail.snapshots, Some(&bail.branch));
            let ctx = self.ctx;
            let l0 = self.b.use_var(lin0);
            self.b.ins().store(MF, l0, ctx, doff::LIN);
            let pc = self.b.ins().iconst(I64, i64::from(bail.pc));
            self.b.ins().store(MF, pc, ctx, doff::STOP_PC);
            let stop = self.b.ins().iconst(I32, i64::from(STOP_BAIL));
            self.b.ins().return_(&[stop]);
        }
    }

    /// Stores each lane's registers live at `pc` (the snapshot's value where there is one) to
    /// its file at `ctx.regs`, and, for a bail (`bail`), where the lane continues: after a
    /// divergent branch where its condition leads, else at `pc`.
    fn store_lanes(
        &mut self,
        pc: u32,
        snapshots: &[(usize, u16, Value)],
        bail: Option<&Option<(Vec<Value>, i64, i64)>>,
    ) {
        let Some(l) = self.lanes() else {
            return;
        };
        let lanes = l.lanes.clone();
        let live = l.live.get(pc as usize).cloned().unwrap_or_default();
        let n = self.f.regs.len();
        let stride = 8 * (n as i32 + 1);
        let files = self.ctx_load(doff::REGS);
        for (j, lane) in lanes.iter().enumerate() {
            let base = stride * j as i32;
            for r in 0..n {
                // A dead register's cell is never read before the item writes it.
                if !live.contains(r as u16) {
                    continue;
                }
                let saved = snapshots
                    .iter()
                    .find(|&&(sj, sr, _)| sj == j && usize::from(sr) == r);
                let v = match saved {
                    Some(&(_, _, v)) => v,
                    None => self.b.use_var(lane.vars[r]),
                };
                let cell = self.cell_of(self.kinds[r], v);
                self.b.ins().store(MF, cell, files, base + 8 * r as i32);
            }
            let cont = match bail {
                None => continue,
                Some(Some((conds, on_true, on_false))) => {
                    let t = self.b.ins().iconst(I64, *on_true);
                    let f = self.b.ins().iconst(I64, *on_false);
                    self.b.ins().select(conds[j], t, f)
                }
                Some(None) => self.b.ins().iconst(I64, i64::from(pc) + 1),
            };
            self.b.ins().store(MF, cont, files, base + 8 * n as i32);
        }
    }
}

/// The coordinates (x, y, z) in its workgroup of the item with linear index `lin` (x fastest).
pub(super) fn item_coords(
    b: &mut FunctionBuilder<'_>,
    lin: Value,
    block: [Value; 3],
) -> [Value; 3] {
    let q = b.ins().udiv(lin, block[0]);
    [
        b.ins().urem(lin, block[0]),
        b.ins().urem(q, block[1]),
        b.ins().udiv(q, block[1]),
    ]
}

/// A group loop's latch: on to the group `width` items further, back to `head`.
pub(super) fn next_group(b: &mut FunctionBuilder<'_>, lin0: Variable, width: usize, head: Block) {
    let l0 = b.use_var(lin0);
    let next = b.ins().iadd_imm_s(l0, width as i64);
    b.def_var(lin0, next);
    b.ins().jump(head, &[]);
}

/// A group loop's exit, every full group done: the first item not run to `ctx.lin`, status 0.
pub(super) fn groups_done(b: &mut FunctionBuilder<'_>, ctx: Value, lin0: Variable) {
    let l0 = b.use_var(lin0);
    b.ins().store(MF, l0, ctx, doff::LIN);
    let done = b.ins().iconst(I32, 0);
    b.ins().return_(&[done]);
}

/// Coordinates `at` (x, y, z) advanced by `step` items along x, wrapping into y and z
/// (`step` at most the x extent: x wraps at most once).
pub(super) fn carry_coords(
    b: &mut FunctionBuilder<'_>,
    at: [Value; 3],
    block: [Value; 3],
    step: i64,
) -> [Value; 3] {
    let zero = b.ins().iconst(I64, 0);
    let x = b.ins().iadd_imm_s(at[0], step);
    let wrap_x = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, x, block[0]);
    let x_wrapped = b.ins().isub(x, block[0]);
    let x = b.ins().select(wrap_x, x_wrapped, x);
    let y1 = b.ins().iadd_imm_s(at[1], 1);
    let y = b.ins().select(wrap_x, y1, at[1]);
    let wrap_y = b.ins().icmp(IntCC::Equal, y, block[1]);
    let y = b.ins().select(wrap_y, zero, y);
    let z1 = b.ins().iadd_imm_s(at[2], 1);
    let z = b.ins().select(wrap_y, z1, at[2]);
    [x, y, z]
}

/// The arms of conditional branch `i` at `pc` (`taken`: its target's block, `next`: the next
/// pc's): (block, pc) where a lane whose condition holds goes, and where one whose condition
/// does not.
pub(super) fn arms(pc: u32, i: Instr, taken: Block, next: Block) -> ((Block, u32), (Block, u32)) {
    let (target, after) = ((taken, i.bc()), (next, pc + 1));
    if i.op == Op::JmpIf {
        (target, after)
    } else {
        (after, target)
    }
}
