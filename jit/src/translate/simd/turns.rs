//! Turn functions: the lockstep groups of a run of workgroups taking turns at a streaming
//! loop's header, so that together they walk memory in order.
//!
//! In a grid-stride loop each group touches `W` consecutive elements per iteration, the
//! grid's item count further on at the next. Run one group to completion after another (the
//! group loop) and memory is touched in runs of `W` elements with jumps between them, which
//! hardware prefetchers do not follow; let every group of a worker's run of workgroups do one
//! iteration in turn and together they touch one contiguous stretch per round.
//!
//! At the loop's header every live register is uniform or affine (`Plan::streams`), so a
//! group's whole state there is one scalar per register: its *turn slot* keeps it between
//! turns. A slot is [`TurnLayout::cells`] cells of 64 bits: the state (`turn::FRESH`,
//! `PARKED`, `DONE` of `crate::device`), the saved registers' scalars, then the coordinates
//! of the group's first item in its workgroup and of the workgroup (three each, filled by
//! the embedder with `FRESH`).
//!
//! From slot `ctx.turn`, each slot in order: a fresh group starts at pc 0, a parked one
//! continues at the header with its registers from its slot; either runs until it comes back
//! to the header along a back edge (its registers to its slot: parked) or returns (done). (An
//! arrival from outside the loop stores every saved register and goes on.) After the last
//! slot, another round while any group parked in this one. A group that leaves lockstep bails
//! out as in a lockstep function, its slot in `ctx.turn`; the embedder finishes its lanes,
//! marks it done and calls again from the next slot. With `ctx.resume = TURN_UNPARK` the
//! function instead stores the lanes of the parked group in slot `ctx.turn` to their files as
//! a bail-out at the header, for the embedder to finish them one by one (the fault order of
//! XPU §5.5: see `backends/src/cpu/compiled.rs`). Invalid memory handles (never in a checked
//! launch) make it decline (`STOP_DECLINE`) before any slot changes.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, Block, InstBuilder, Value};
use cranelift_frontend::Variable;

use cajeta_bytecode::{Function, Op};

use super::{counts_lanes, Class, Memory, Plan, Simd};
use crate::device::{off as doff, turn, STOP_DECLINE, TURN_UNPARK};
use crate::liveness;
use crate::loops;
use crate::translate::lanes_facts;
use crate::translate::{I32, I64, MF};

/// Where a turn function keeps each group's state (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TurnLayout {
    /// The streaming loop's header, where groups take turns.
    pub header: u32,
    /// The registers a slot keeps, from cell 1 on: those live at the header but handles and
    /// parameters nothing writes (both known from the launch).
    pub saved: Vec<u16>,
}

impl TurnLayout {
    /// The first of the slot's six coordinate cells.
    pub fn geometry(&self) -> usize {
        1 + self.saved.len()
    }

    /// Cells per slot.
    pub fn cells(&self) -> usize {
        self.geometry() + 6
    }
}

/// The turn layout of kernel `f`, when its plan allows turns.
pub(crate) fn layout(f: &Function, plan: &Plan) -> Option<TurnLayout> {
    let header = plan.stream_header.filter(|_| plan.takes_turns())?;
    let live = liveness::live_in(f).get(header as usize)?.clone();
    let facts = lanes_facts::facts(f, false);
    let counted = lanes_facts::counted(f, false, |pc, i| counts_lanes(plan, &facts, pc, i));
    let written = |r: u16| f.code.iter().any(|i| loops::writes(i, r));
    let mut saved = Vec::new();
    for r in (0..f.regs.len() as u16).filter(|&r| live.contains(r)) {
        // (A counted comparison is varying: never live at a streaming loop's header.)
        if counted.get(header as usize)?[usize::from(r)] {
            return None;
        }
        let known = plan.classes[usize::from(r)] == Class::Handle || r < f.params && !written(r);
        if !known {
            saved.push(r);
        }
    }
    Some(TurnLayout { header, saved })
}

/// A turn function's translation state.
pub(super) struct Turns {
    layout: TurnLayout,
    /// An arrival at the header from outside the loop (every saved register to the slot, and
    /// on into the loop).
    arrive: Block,
    /// An arrival along a back edge (only the saved registers the loop writes).
    come_back: Block,
    /// Per pc: whether every path from the entry to it passes the header (its jumps to the
    /// header are back edges, reached only by a group that parked before).
    behind: Vec<bool>,
    /// The slot being run, and its address.
    cur: Variable,
    slot: Variable,
}

impl Turns {
    /// Where a jump from `from` (`None`: the start) to the header goes.
    pub(super) fn arrival(&self, from: Option<u32>) -> Block {
        match from.is_some_and(|pc| self.behind.get(pc as usize) == Some(&true)) {
            true => self.come_back,
            false => self.arrive,
        }
    }

    pub(super) fn header(&self) -> u32 {
        self.layout.header
    }

    /// The slot being run.
    pub(super) fn current(&self) -> Variable {
        self.cur
    }
}

/// The pcs reachable from `from` without passing `avoid`.
fn reachable(f: &Function, from: u32, avoid: Option<u32>) -> Vec<bool> {
    let mut seen = vec![false; f.code.len()];
    let mut stack = vec![from];
    while let Some(pc) = stack.pop() {
        let Some(i) = f.code.get(pc as usize) else {
            continue;
        };
        if seen[pc as usize] || avoid == Some(pc) && pc != from {
            continue;
        }
        seen[pc as usize] = true;
        stack.extend(liveness::successors(pc, i, f.code.len()));
    }
    seen
}

impl Simd<'_, '_> {
    /// The turn loop (from the `checked` block; see the module documentation).
    pub(super) fn turn_loop(&mut self, valid: Value, layout: TurnLayout) {
        let f = self.f;
        let h = layout.header;
        let in_loop = reachable(f, h, None);
        let before = match h {
            0 => vec![false; f.code.len()],
            _ => reachable(f, 0, Some(h)),
        };
        let behind = before.iter().map(|&b| !b).collect();
        // Saved registers some path from the header writes: stored at every arrival.
        let rewritten: Vec<u16> = layout
            .saved
            .iter()
            .copied()
            .filter(|&r| {
                f.code
                    .iter()
                    .enumerate()
                    .any(|(pc, i)| in_loop[pc] && loops::writes(i, r))
            })
            .collect();
        let geometry_in_loop = f
            .code
            .iter()
            .enumerate()
            .any(|(pc, i)| in_loop[pc] && i.op == Op::Geom);
        let stride = 8 * layout.cells() as i64;

        let ctx = self.ctx;
        let b = &mut self.b;
        let slots = b.ins().load(I64, MF, ctx, doff::TURNS);
        let nslots = b.ins().load(I64, MF, ctx, doff::NTURNS);
        let start = b.ins().load(I64, MF, ctx, doff::TURN);
        let mode = b.ins().load(I64, MF, ctx, doff::RESUME);
        let (cur, slot, parked) = (
            b.declare_var(I64),
            b.declare_var(I64),
            b.declare_var(types::I8),
        );
        b.def_var(cur, start);
        // (Continuing a round: it may have parked groups before `start`.)
        let yes = b.ins().iconst(types::I8, 1);
        b.def_var(parked, yes);
        let [go, decline, dispatch, round_end, again, pick, not_parked, skip, fresh, resume, unpark] =
            [(); 11].map(|_| b.create_block());
        b.set_cold_block(decline);
        b.ins().brif(valid, go, &[], decline, &[]);
        b.switch_to_block(decline);
        let declined = b.ins().iconst(I32, i64::from(STOP_DECLINE));
        b.ins().return_(&[declined]);
        b.switch_to_block(go);
        let unparking = b.ins().icmp_imm_s(IntCC::Equal, mode, TURN_UNPARK as i64);
        b.ins().brif(unparking, unpark, &[], dispatch, &[]);

        // The next slot, or the next round.
        b.switch_to_block(dispatch);
        let c = b.use_var(cur);
        let end = b.ins().icmp(IntCC::Equal, c, nslots);
        b.ins().brif(end, round_end, &[], pick, &[]);
        b.switch_to_block(round_end);
        let any = b.use_var(parked);
        let finished = b.create_block();
        b.ins().brif(any, again, &[], finished, &[]);
        b.switch_to_block(again);
        let zero = b.ins().iconst(I64, 0);
        b.def_var(cur, zero);
        let no = b.ins().iconst(types::I8, 0);
        b.def_var(parked, no);
        b.ins().jump(dispatch, &[]);
        b.switch_to_block(finished);
        let ok = b.ins().iconst(I32, 0);
        b.ins().return_(&[ok]);

        b.switch_to_block(pick);
        let offset = b.ins().imul_imm_s(c, stride);
        let at = b.ins().iadd(slots, offset);
        b.def_var(slot, at);
        let state = b.ins().load(I64, MF, at, 0);
        let is_parked = b.ins().icmp_imm_s(IntCC::Equal, state, turn::PARKED as i64);
        b.ins().brif(is_parked, resume, &[], not_parked, &[]);
        b.switch_to_block(not_parked);
        let is_fresh = b.ins().icmp_imm_s(IntCC::Equal, state, turn::FRESH as i64);
        b.ins().brif(is_fresh, fresh, &[], skip, &[]);
        b.switch_to_block(skip);
        let next = b.ins().iadd_imm_s(c, 1);
        b.def_var(cur, next);
        b.ins().jump(dispatch, &[]);

        let header = self.blocks[h as usize].expect("a loop header starts a block");
        let turns = Turns {
            layout,
            arrive: self.b.create_block(),
            come_back: self.b.create_block(),
            behind,
            cur,
            slot,
        };

        // A fresh group: its coordinates, the fresh item frame, the start.
        self.b.switch_to_block(fresh);
        self.slot_geometry(&turns);
        self.fresh_lanes();
        let first = match h {
            0 => turns.arrival(None),
            _ => self.blocks.first().copied().flatten().unwrap_or(self.latch),
        };
        self.b.ins().jump(first, &[]);

        // A parked group: on at the header.
        self.b.switch_to_block(resume);
        if geometry_in_loop {
            self.slot_geometry(&turns);
        }
        self.unpark(&turns);
        self.b.ins().jump(header, &[]);

        // A parked group's lanes to their files, for the embedder.
        self.b.switch_to_block(unpark);
        let at = self.b.ins().imul_imm_s(start, stride);
        let at = self.b.ins().iadd(slots, at);
        self.b.def_var(slot, at);
        self.unpark(&turns);
        let bail = self.bail(h, None);
        self.b.ins().jump(bail, &[]);

        // Arrivals: the registers to the slot; from outside the loop, on into it (a slot
        // holds every saved register from then on), along a back edge, parked until the next
        // round (only the registers the loop writes change).
        let parks = self.b.create_block();
        for (block, regs) in [
            (turns.arrive, &turns.layout.saved),
            (turns.come_back, &rewritten),
        ] {
            self.b.switch_to_block(block);
            let at = self.b.use_var(slot);
            self.pc = h;
            for &r in regs {
                let k = turns.layout.saved.iter().position(|&s| s == r).unwrap_or(0);
                let (_, base) = self.base(r).expect("a saved register is uniform or affine");
                self.b.ins().store(MF, base, at, 8 * (1 + k as i32));
            }
            if block == turns.arrive {
                let state = self.b.ins().iconst(I64, turn::PARKED as i64);
                self.b.ins().store(MF, state, at, 0);
                self.b.ins().jump(header, &[]);
            } else {
                self.b.ins().jump(parks, &[]);
            }
        }
        self.b.switch_to_block(parks);
        let yes = self.b.ins().iconst(types::I8, 1);
        self.b.def_var(parked, yes);
        let c = self.b.use_var(cur);
        let next = self.b.ins().iadd_imm_s(c, 1);
        self.b.def_var(cur, next);
        self.b.ins().jump(dispatch, &[]);

        // A group that returned: done.
        self.b.switch_to_block(self.latch);
        let at = self.b.use_var(slot);
        let state = self.b.ins().iconst(I64, turn::DONE as i64);
        self.b.ins().store(MF, state, at, 0);
        let c = self.b.use_var(cur);
        let next = self.b.ins().iadd_imm_s(c, 1);
        self.b.def_var(cur, next);
        self.b.ins().jump(dispatch, &[]);
        self.turns = Some(turns);
    }

    /// The coordinates of the group in the current slot.
    fn slot_geometry(&mut self, turns: &Turns) {
        let at = self.b.use_var(turns.slot);
        let cell = |k: usize| 8 * (turns.layout.geometry() + k) as i32;
        let first = [0, 1, 2].map(|k| self.b.ins().load(I32, MF, at, cell(k)));
        self.aligned_coords(first);
        for axis in 0..3 {
            let g = self.b.ins().load(I32, MF, at, cell(3 + axis));
            self.b.def_var(self.group[axis], g);
            let extent = self.b.ins().ireduce(I32, self.block[axis]);
            let offset = self.b.ins().imul(g, extent);
            self.b.def_var(self.group_offset[axis], offset);
        }
    }

    /// The registers live at the header from the current slot (and the launch).
    fn unpark(&mut self, turns: &Turns) {
        let at = self.b.use_var(turns.slot);
        let h = turns.layout.header;
        let live = self.live[h as usize].clone();
        self.pc = h;
        for r in (0..self.f.regs.len() as u16).filter(|&r| live.contains(r)) {
            let class = self.class(r);
            let fact = self.fact(h, r);
            let kept = turns.layout.saved.iter().position(|&s| s == r);
            match (class, kept) {
                (Class::Handle, _) => {
                    // (Turns have no shared memory: a handle is a buffer parameter's.)
                    if let Some(Memory::Param(p)) = self.plan.memory[usize::from(r)] {
                        let cell = self.cells[usize::from(p)];
                        self.b.def_var(self.vars[usize::from(r)][0], cell);
                    }
                }
                (_, Some(k)) => {
                    let ty = super::scalar_type(class);
                    let v = self.b.ins().load(ty, MF, at, 8 * (1 + k as i32));
                    self.set_base(r, fact, v);
                }
                (_, None) => {
                    let cell = self.cells[usize::from(r)];
                    let v = self.cell_scalar(class, cell);
                    self.set_base(r, fact, v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cajeta_bytecode::{FnKind, Instr, Module, Scalar, Type};

    /// A grid-stride kernel `for (i = globalIdX; i < n; i += stride) { acc op … }`: r0 = n
    /// (a parameter nothing writes), r1 a temporary, r2 = i, r3 = stride, r4 = i < n, r5 a
    /// value computed in the body; with `carried`, r5 is also read at the header (a varying
    /// value the loop carries).
    fn grid_stride(carried: bool) -> Function {
        let (i64t, u32t) = (Type::Scalar(Scalar::I64), Type::Scalar(Scalar::U32));
        let mut code = vec![
            Instr::new(Op::Geom, 1, 9, 0),
            Instr::new(Op::WrapI64, 2, 1, 0),
            Instr::new(Op::Geom, 1, 12, 0),
            Instr::new(Op::WrapI64, 3, 1, 0),
            Instr::new(Op::LtI64, 4, 2, 0),
            Instr::with_bc(Op::JmpIfNot, 4, 10),
            Instr::new(Op::MulI64, 5, 2, 3),
            Instr::new(Op::AddI64, 2, 2, 3),
            Instr::with_bc(Op::Jmp, 0, 4),
            Instr::new(Op::RetVoid, 0, 0, 0),
            Instr::new(Op::RetVoid, 0, 0, 0),
        ];
        if carried {
            // r5 = r5 * i: what r5 held at the header is read in the body.
            code[6] = Instr::new(Op::MulI64, 5, 5, 2);
        }
        let regs = vec![i64t, u32t, i64t, i64t, Type::Scalar(Scalar::Bool), i64t];
        crate::test_function::function(FnKind::Kernel, (1, None), regs, code)
    }

    /// The turn layout of kernel `f` (alone in its module).
    fn layout_of(f: &Function) -> Option<TurnLayout> {
        let module = Module {
            functions: vec![f.clone()],
            ..Module::default()
        };
        let plan = super::super::plan(&module, f, false).expect("a SIMD plan");
        layout(f, &plan)
    }

    #[test]
    fn a_grid_stride_loop_keeps_its_counter_and_stride_in_a_slot_not_its_parameter() {
        let layout = layout_of(&grid_stride(false)).expect("turns");
        assert_eq!(layout.header, 4);
        assert_eq!(layout.saved, vec![2, 3]);
        assert_eq!((layout.geometry(), layout.cells()), (3, 9));
    }

    #[test]
    fn a_loop_carrying_a_varying_value_takes_no_turns() {
        assert_eq!(layout_of(&grid_stride(true)), None);
    }

    #[test]
    fn reachability_avoids_the_given_pc() {
        let f = grid_stride(false);
        // From the entry without the header: the set-up only.
        let before = reachable(&f, 0, Some(4));
        assert_eq!(before.iter().filter(|&&b| b).count(), 4);
        // From the header: the loop and its exit, not the set-up (nor the dead pc 9).
        let after = reachable(&f, 4, None);
        assert!(after[4] && after[8] && after[10] && !after[0] && !after[9]);
    }
}
