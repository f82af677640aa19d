//! The translation of promoted loops ([`crate::promote`]): the elements' variables, their
//! preload in the loop's preheader, the accesses that use them and the write-back on the
//! way out.
//!
//! Invariant: inside a promoted loop whose preheader found its conditions (`active`), each
//! candidate's variable holds the element's value, and memory may hold an older one for the
//! stored candidates; without them (`!active`) memory holds it and the variables are unused.
//! Every way out of the loop (an exit edge, an error) writes the stored variables back when
//! `active`, so outside the loop memory is always right.

use cajeta_bytecode::{Scalar, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{self, I32, I64, I8};
use cranelift_codegen::ir::{Block, BlockArg, InstBuilder, Value};
use cranelift_frontend::Variable;

use super::{kind_of, prefix_op, pure_total, Tr};
use crate::loops;
use crate::promote::{self, Bound, Induction, Promotion};
use crate::JitError;

/// A promoted loop as translated.
pub(super) struct Promoted {
    pub p: Promotion,
    /// The hoisting loop whose preheader tests the arrays apart: the innermost one that looks
    /// up a view the promotion uses (the views are fixed in it, and defined before it).
    owner: usize,
    /// Per candidate: the element's variable and its index's value.
    vals: Vec<Variable>,
    idxs: Vec<Variable>,
    /// The preheader found the conditions (`i8`).
    active: Variable,
    /// From the owner's preheader: the arrays distinct (`i8`), the least length of the
    /// candidates' arrays and of those of the [`Promotion::counted`] accesses.
    apart: Variable,
    least: Variable,
    least_counted: Variable,
    /// The error exit of faults inside the loop: the write-back, then the function's (none
    /// when the loop stores no candidate).
    fault: Option<Block>,
}

impl Promoted {
    fn writes_back(&self) -> bool {
        self.fault.is_some()
    }
}

/// The part of an unchecked copy's test ([`Tr::versioned`]) that a promoted loop adds.
pub(super) struct FastTest {
    /// The loop (its index in [`Tr::promoted`]).
    pub promoted: usize,
    /// Its `active`.
    pub active: Value,
    /// The conflicting accesses' indices unequal to the candidates' (`None`: none to test).
    pub apart_ok: Option<Value>,
    /// Those accesses (array, index register): in the copy, they go to memory alone.
    pub apart: Vec<(u16, u16)>,
}

/// What an element access is to the promoted loop around it.
#[derive(Clone, Debug)]
pub(super) enum Role {
    /// Candidate `n` of loop `k`.
    Candidate(usize, usize),
    /// It may reach these candidates of loop `k` (its index may equal theirs); `true`: its
    /// index is the loop's counter, which never meets theirs while `active`
    /// ([`promote::Conflict::counter`]).
    Conflict(usize, Vec<usize>, bool),
}

impl Tr<'_, '_> {
    /// Finds the loops to promote (host code with inline objects, no fuel).
    pub(super) fn plan_promotions(&mut self) {
        if !self.s.inline_objects || self.s.fuel || self.dev.is_some() {
            return;
        }
        let module = self.s.module;
        let loops: Vec<_> = self.hoisted.iter().map(|h| h.0.clone()).collect();
        let found = promote::promotions(
            self.f,
            &loops,
            |i| prefix_op(module, i),
            |i| pure_total(module, i),
        );
        for p in found {
            // The preheader recomputes an index the loop computes: not the first
            // instruction of an inlined call (its depth check would come along).
            // (Nor may it be a strength-reduced product's multiplication or increment,
            // which advance the product when translated.)
            let recomputable = |d: u32| {
                !self.sites.iter().any(|s| s.start == d)
                    && self.reduced_product(d).is_none()
                    && !self
                        .hoisted
                        .iter()
                        .any(|h| h.0.reduced.iter().any(|r| r.inc == d))
            };
            if p.candidates
                .iter()
                .any(|c| c.idx_def.is_some_and(|d| !recomputable(d)))
            {
                continue;
            }
            let mut arrays: Vec<u16> = p.candidates.iter().map(|c| c.arr).collect();
            arrays.extend(p.distinct.iter().flat_map(|&(a, b)| [a, b]));
            arrays.extend(p.counted.iter().map(|&(a, _)| a));
            let owners: Option<Vec<usize>> = arrays
                .iter()
                .map(|&a| self.hoisted_entry(p.header, a).map(|(e, _)| e))
                .collect();
            // Every owner encloses the loop: the smallest is the innermost.
            let Some(owner) = owners.and_then(|o| {
                o.into_iter().min_by_key(|&e| {
                    let l = &self.hoisted[e].0;
                    l.end - l.header
                })
            }) else {
                continue;
            };
            let b = &mut self.b;
            let vals = p
                .candidates
                .iter()
                .map(|c| b.declare_var(kind_of(Type::Scalar(c.elem)).ty()))
                .collect();
            // One per index register.
            let mut idxs: Vec<Variable> = Vec::new();
            for (m, c) in p.candidates.iter().enumerate() {
                let same = p.candidates[..m].iter().position(|d| d.idx == c.idx);
                idxs.push(match same {
                    Some(e) => idxs[e],
                    None => b.declare_var(I64),
                });
            }
            let fault = p.candidates.iter().any(|c| c.stored).then(|| {
                let fault = b.create_block();
                b.set_cold_block(fault);
                b.append_block_param(fault, I32);
                b.append_block_param(fault, I32);
                fault
            });
            self.promoted.push(Promoted {
                p,
                owner,
                vals,
                idxs,
                active: b.declare_var(I8),
                apart: b.declare_var(I8),
                least: b.declare_var(I64),
                least_counted: b.declare_var(I64),
                fault,
            });
        }
    }

    /// The end of hoisting loop `k`'s preheader: for the promotions it owns, whether their
    /// arrays are distinct and the least length of their candidates' arrays; for the one of
    /// the loop itself, the conditions and the preload.
    pub(super) fn promotion_preheader(&mut self, k: usize) -> Result<(), JitError> {
        for n in 0..self.promoted.len() {
            if self.promoted[n].owner == k {
                self.promotion_apart(n);
            }
        }
        match self.promoted.iter().position(|p| p.p.hoisted == k) {
            Some(n) => self.promotion_preload(n),
            None => Ok(()),
        }
    }

    /// The data address of array register `arr`'s view in promoted loop `n`.
    fn promoted_data(&mut self, n: usize, arr: u16) -> Value {
        let header = self.promoted[n].p.header;
        let (data, _) = self
            .hoisted_view(header, arr)
            .expect("promoted arrays have hoisted views");
        self.b.use_var(data)
    }

    fn promotion_apart(&mut self, n: usize) {
        let header = self.promoted[n].p.header;
        let mut apart = self.b.ins().iconst(I8, 1);
        for (a, b) in self.promoted[n].p.distinct.clone() {
            let (x, y) = (self.promoted_data(n, a), self.promoted_data(n, b));
            let ne = self.b.ins().icmp(IntCC::NotEqual, x, y);
            apart = self.b.ins().band(apart, ne);
        }
        let p = &self.promoted[n].p;
        let arrays: Vec<u16> = p.candidates.iter().map(|c| c.arr).collect();
        let counted: Vec<u16> = p.counted.iter().map(|&(a, _)| a).collect();
        let least = self.least_length(header, &arrays);
        let least_counted = self.least_length(header, &counted);
        let p = &self.promoted[n];
        let (apart_var, least_var, counted_var) = (p.apart, p.least, p.least_counted);
        self.b.def_var(apart_var, apart);
        self.b.def_var(least_var, least);
        self.b.def_var(counted_var, least_counted);
    }

    /// The least length of `arrays` (hoisted views at `header`); 0 for none.
    fn least_length(&mut self, header: u32, arrays: &[u16]) -> Value {
        let mut least = None;
        for &arr in arrays {
            let (_, len) = self
                .hoisted_view(header, arr)
                .expect("promoted arrays have hoisted views");
            let len = self.b.use_var(len);
            least = Some(match least {
                Some(m) => self.b.ins().umin(m, len),
                None => len,
            });
        }
        least.unwrap_or_else(|| self.b.ins().iconst(I64, 0))
    }

    /// The loop's own preheader: each candidate's index (recomputed when the loop computes
    /// it), the conditions, and the elements loaded when they hold.
    fn promotion_preload(&mut self, n: usize) -> Result<(), JitError> {
        let f = self.f;
        let cands = self.promoted[n].p.candidates.clone();
        let mut defs: Vec<u32> = cands.iter().filter_map(|c| c.idx_def).collect();
        defs.sort_unstable();
        defs.dedup();
        for d in defs {
            // Pure and total, from registers the loop leaves alone; its register is dead at
            // the header, so writing it here changes nothing the program sees.
            self.instr(d, f.code[d as usize])?;
        }
        let least = self.b.use_var(self.promoted[n].least);
        let mut ok = self.b.use_var(self.promoted[n].apart);
        let mut tested: Vec<u16> = Vec::new();
        for (c, &var) in cands.iter().zip(&self.promoted[n].idxs.clone()) {
            let x = self.get(c.idx);
            self.b.def_var(var, x);
            if !tested.contains(&c.idx) {
                tested.push(c.idx);
                let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, x, least);
                ok = self.b.ins().band(ok, inside);
            }
        }
        if let Some(c) = self.promoted[n].p.induction {
            ok = self.counter_conditions(n, c, ok);
        }
        let active = self.promoted[n].active;
        self.b.def_var(active, ok);
        let vals = self.promoted[n].vals.clone();
        for (c, &var) in cands.iter().zip(&vals) {
            let zero = self.zero_of(c.elem);
            self.b.def_var(var, zero);
        }
        let load = self.b.create_block();
        let join = self.b.create_block();
        self.b.ins().brif(ok, load, &[], join, &[]);
        self.b.switch_to_block(load);
        for (m, (c, &var)) in cands.iter().zip(&vals).enumerate() {
            let at = self.candidate_addr(n, m);
            let ty = kind_of(Type::Scalar(c.elem)).ty();
            let v = self.load_scalar(c.elem, ty, at);
            self.b.def_var(var, v);
        }
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(join);
        Ok(())
    }

    /// `ok` and what the loop's counter must satisfy from its start: above the index of
    /// every candidate a counter conflict may reach, and, for the counted accesses, at least
    /// 0 with the bound at most their arrays' lengths.
    fn counter_conditions(&mut self, n: usize, c: Induction, mut ok: Value) -> Value {
        let start = self.get(c.j);
        let p = &self.promoted[n];
        let mut above: Vec<Variable> = Vec::new();
        for k in p.p.conflicts.iter().filter(|k| k.counter) {
            let x = p.idxs[k.candidate];
            if !above.contains(&x) {
                above.push(x);
            }
        }
        for x in above {
            let x = self.b.use_var(x);
            let gt = self.b.ins().icmp(IntCC::SignedGreaterThan, start, x);
            ok = self.b.ins().band(ok, gt);
        }
        if !self.promoted[n].p.counted.is_empty() {
            let bound = match c.bound {
                Bound::Reg(r) => self.get(r),
                Bound::Const(k) => self.b.ins().iconst(I64, k),
            };
            let least = self.b.use_var(self.promoted[n].least_counted);
            let from_zero = self
                .b
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, start, 0);
            let fits = self
                .b
                .ins()
                .icmp(IntCC::SignedLessThanOrEqual, bound, least);
            ok = self.b.ins().band(ok, from_zero);
            ok = self.b.ins().band(ok, fits);
        }
        ok
    }

    /// Whether `arr[idx]` at `pc` is a [`Promotion::counted`] access.
    pub(super) fn promoted_counted(&self, pc: u32, arr: u16, idx: u16) -> bool {
        self.promoted
            .iter()
            .any(|p| p.p.contains(pc) && p.p.counted.contains(&(arr, idx)))
    }

    fn zero_of(&mut self, s: Scalar) -> Value {
        match kind_of(Type::Scalar(s)).ty() {
            types::F64 => self.b.ins().f64const(0.0),
            types::F32 => self.b.ins().f32const(0.0),
            _ => self.b.ins().iconst(I64, 0),
        }
    }

    /// The address of candidate `m` of promoted loop `n`.
    fn candidate_addr(&mut self, n: usize, m: usize) -> Value {
        let c = self.promoted[n].p.candidates[m];
        let data = self.promoted_data(n, c.arr);
        let idx = self.b.use_var(self.promoted[n].idxs[m]);
        self.element_addr(data, idx, c.elem)
    }

    /// Stores the stored candidates of promoted loop `n` if it is active; continues in a new
    /// block.
    fn write_back(&mut self, n: usize) {
        let active = self.b.use_var(self.promoted[n].active);
        let store = self.b.create_block();
        let done = self.b.create_block();
        self.b.ins().brif(active, store, &[], done, &[]);
        self.b.switch_to_block(store);
        for (m, c) in self.promoted[n].p.candidates.clone().iter().enumerate() {
            if !c.stored {
                continue;
            }
            let at = self.candidate_addr(n, m);
            let v = self.b.use_var(self.promoted[n].vals[m]);
            match kind_of(Type::Scalar(c.elem)).ty() {
                types::F64 | types::F32 => {
                    self.b.ins().store(self.mem.elems, v, at, 0);
                }
                _ => self.store_scalar(c.elem, v, at),
            }
        }
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
    }

    /// The block an edge from `pc` to `target` (entering `blk`) takes: one that writes the
    /// elements back first when it leaves a promoted loop.
    pub(super) fn exit_edge(&mut self, pc: u32, target: u32, blk: Block) -> Block {
        let Some(n) = self
            .promoted
            .iter()
            .position(|p| p.p.contains(pc) && !p.p.contains(target) && p.writes_back())
        else {
            return blk;
        };
        let e = self.b.create_block();
        self.exits.push((e, n, blk));
        e
    }

    /// The error exit for a fault at `pc`.
    pub(super) fn fault_target(&self, pc: u32) -> Block {
        self.promoted
            .iter()
            .find(|p| p.p.contains(pc))
            .and_then(|p| p.fault)
            .unwrap_or(self.fault)
    }

    /// In a cold error block for a fault at `pc`: the write-back of the promoted loop around
    /// it, if any; returns the error exit to go on to.
    pub(super) fn write_back_before_fault(&mut self, pc: u32) -> Block {
        if let Some(n) = self
            .promoted
            .iter()
            .position(|p| p.p.contains(pc) && p.writes_back())
        {
            self.write_back(n);
        }
        self.fault
    }

    /// Fills the exit edges and error exits of the promoted loops.
    pub(super) fn fill_promoted(&mut self) {
        for (e, n, blk) in std::mem::take(&mut self.exits) {
            self.b.switch_to_block(e);
            self.write_back(n);
            self.b.ins().jump(blk, &[]);
        }
        for n in 0..self.promoted.len() {
            let Some(fault) = self.promoted[n].fault else {
                continue;
            };
            self.b.switch_to_block(fault);
            let (st, pc) = (self.b.block_params(fault)[0], self.b.block_params(fault)[1]);
            self.write_back(n);
            let args = [BlockArg::Value(st), BlockArg::Value(pc)];
            self.b.ins().jump(self.fault, &args);
        }
    }

    /// What the access of `arr` at index register `idx` at `pc` is to a promoted loop.
    pub(super) fn promoted_role(&self, pc: u32, arr: u16, idx: u16) -> Option<Role> {
        let k = self.promoted.iter().position(|p| p.p.contains(pc))?;
        let p = &self.promoted[k].p;
        if let Some(m) = p.candidate(arr, idx) {
            return Some(Role::Candidate(k, m));
        }
        let idx = p.index_of(idx);
        let matching = || p.conflicts.iter().filter(|c| c.arr == arr && c.k == idx);
        let hits: Vec<usize> = matching().map(|c| c.candidate).collect();
        let counter = matching().all(|c| c.counter);
        (!hits.is_empty()).then_some(Role::Conflict(k, hits, counter))
    }

    /// An access in an unchecked copy whose test found the elements in their variables: a
    /// candidate's is its variable (`true`: done); one tested apart goes to memory.
    pub(super) fn promoted_fast(&mut self, role: &Option<Role>, get: bool, value: u16) -> bool {
        let Some(Role::Candidate(k, m)) = *role else {
            return false;
        };
        if self.fast != Some(k) {
            return false;
        }
        let var = self.promoted[k].vals[m];
        if get {
            let v = self.b.use_var(var);
            self.set(value, v);
        } else {
            let v = self.get(value);
            self.b.def_var(var, v);
        }
        true
    }

    /// After an access made in memory: a candidate's load takes the variable when the loop
    /// is active, its store sets it; a conflicting access does the same when its index
    /// meets the candidate's (and was not tested apart).
    pub(super) fn promoted_after(
        &mut self,
        role: Option<Role>,
        get: bool,
        arr: u16,
        idx: u16,
        value: u16,
    ) {
        match role {
            None => {}
            Some(Role::Candidate(k, m)) => {
                let var = self.promoted[k].vals[m];
                if get {
                    let active = self.b.use_var(self.promoted[k].active);
                    let (held, loaded) = (self.b.use_var(var), self.get(value));
                    let v = self.b.ins().select(active, held, loaded);
                    self.set(value, v);
                } else {
                    let v = self.get(value);
                    self.b.def_var(var, v);
                }
            }
            Some(Role::Conflict(k, hits, _)) => {
                if self.fast == Some(k) && self.apart.contains(&(arr, idx)) {
                    return;
                }
                for m in hits {
                    let var = self.promoted[k].vals[m];
                    let x = self.b.use_var(self.promoted[k].idxs[m]);
                    let at = self.get(idx);
                    let meet = self.b.ins().icmp(IntCC::Equal, at, x);
                    let held = self.b.use_var(var);
                    let v = self.get(value);
                    if get {
                        let active = self.b.use_var(self.promoted[k].active);
                        let hit = self.b.ins().band(meet, active);
                        let v = self.b.ins().select(hit, held, v);
                        self.set(value, v);
                    } else {
                        let v = self.b.ins().select(meet, v, held);
                        self.b.def_var(var, v);
                    }
                }
            }
        }
    }

    /// Whether `arr[idx]` at `pc` is a promoted element.
    pub(super) fn promoted_candidate(&self, pc: u32, arr: u16, idx: u16) -> bool {
        matches!(self.promoted_role(pc, arr, idx), Some(Role::Candidate(..)))
    }

    /// For [`Tr::versioned`]'s test of a block's range `at..end` in a promoted loop: the
    /// loop's `active` and, for the conflicting accesses whose registers keep their values
    /// from `at` to them (`kept`), their indices unequal to the candidates'.
    pub(super) fn promotion_test(
        &mut self,
        at: usize,
        end: usize,
        kept: impl Fn(usize, u16) -> bool,
    ) -> Option<FastTest> {
        let k = self.promoted.iter().position(|p| p.p.contains(at as u32))?;
        let f = self.f;
        let active = self.b.use_var(self.promoted[k].active);
        let mut ok: Option<Value> = None;
        let mut apart = Vec::new();
        for pc in at..end {
            let Some((arr, idx)) = loops::element_operands(&f.code[pc]) else {
                continue;
            };
            let Some(Role::Conflict(_, hits, counter)) = self.promoted_role(pc as u32, arr, idx)
            else {
                continue;
            };
            if apart.contains(&(arr, idx)) {
                continue;
            }
            // A counter never meets the candidates' indices while `active`.
            if counter {
                apart.push((arr, idx));
                continue;
            }
            if !kept(pc, arr) || !kept(pc, idx) {
                continue;
            }
            let mut xs: Vec<Variable> = Vec::new();
            for &m in &hits {
                let x = self.promoted[k].idxs[m];
                if !xs.contains(&x) {
                    xs.push(x);
                }
            }
            for x in xs {
                let x = self.b.use_var(x);
                let at = self.get(idx);
                let ne = self.b.ins().icmp(IntCC::NotEqual, at, x);
                ok = Some(match ok {
                    Some(o) => self.b.ins().band(o, ne),
                    None => ne,
                });
            }
            apart.push((arr, idx));
        }
        Some(FastTest {
            promoted: k,
            active,
            apart_ok: ok,
            apart,
        })
    }

    /// Whether the range `at..end` accesses a promoted element (its block is then worth
    /// versioning).
    pub(super) fn promoted_access_in(&self, at: usize, end: usize) -> bool {
        let f = self.f;
        (at..end).any(|pc| {
            loops::element_operands(&f.code[pc])
                .is_some_and(|(arr, idx)| self.promoted_candidate(pc as u32, arr, idx))
        })
    }
}
