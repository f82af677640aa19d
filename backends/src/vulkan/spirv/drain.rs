//! Items that return early in kernels with workgroup barriers, on lavapipe.
//!
//! XPU §5.2: an item that has returned is no longer a member of its workgroup's rendezvous.
//! lavapipe (Mesa 22.3) runs a workgroup's subgroups as coroutines, resumed round-robin once
//! per barrier, and stops resuming *all* of them on the first pass that finds one finished.
//! A subgroup whose items all returned before a loop of barriers (the `if (i >= n) return;`
//! guard of a tree reduction, in a partly filled workgroup) ran no iteration of that loop,
//! finished first, and the others never got past their next barrier: their later stores
//! were lost.
//!
//! So the kernel body becomes a function called by a wrapper entry point. Item 0 sets a
//! workgroup counter of live items before a first barrier; after the body each item leaves
//! the count and waits at barriers until it is zero. Every subgroup then finishes on the
//! same pass (or the next one, which the scheduler still completes): those waiting meet the
//! live items' barriers one pass at a time, as lavapipe's barriers are only a suspension of
//! the subgroup, whatever the call site. The wrapper is only emitted for lavapipe
//! (`Target::drain_returns`): elsewhere barriers in non-uniform control flow are undefined.

use rspirv::spirv::{
    BuiltIn, FunctionControl, LoopControl, Scope, SelectionControl, StorageClass, Word,
};

use super::{be, Cx, R};

impl Cx<'_> {
    /// Emits `main()`: `if (l == 0) live = items; barrier; body(); live -= 1;
    /// while (live != 0) barrier;`. Returns its id, the entry point.
    pub(super) fn drain_wrapper(&mut self, body: Word) -> R<Word> {
        let (u, tb) = (self.t_u32, self.t_bool);
        let p = self.ptr(StorageClass::Workgroup, u);
        let live = self.b.variable(p, None, StorageClass::Workgroup, None);
        let ft = self.b.type_function(self.t_void, []);
        let main = self
            .b
            .begin_function(self.t_void, None, FunctionControl::NONE, ft)
            .map_err(be)?;
        self.b.begin_block(None).map_err(be)?;
        let l = self.builtin(BuiltIn::LocalInvocationIndex, None)?;
        let zero = self.k32(0);
        let first = self.b.i_equal(tb, None, l, zero).map_err(be)?;
        let (set, joined) = (self.b.id(), self.b.id());
        self.b
            .selection_merge(joined, SelectionControl::NONE)
            .map_err(be)?;
        self.b
            .branch_conditional(first, set, joined, [])
            .map_err(be)?;
        self.b.begin_block(Some(set)).map_err(be)?;
        let [wx, wy, wz] = self.wg_size;
        let items = self.b.i_mul(u, None, wx, wy).map_err(be)?;
        let items = self.b.i_mul(u, None, items, wz).map_err(be)?;
        self.b.store(live, items, None, []).map_err(be)?;
        self.b.branch(joined).map_err(be)?;
        self.b.begin_block(Some(joined)).map_err(be)?;
        self.workgroup_barrier()?;
        self.b
            .function_call(self.t_void, None, body, [])
            .map_err(be)?;
        let scope = self.k32(Scope::Workgroup as u32);
        let relaxed = self.k32(0);
        let one = self.k32(1);
        self.b
            .atomic_i_sub(u, None, live, scope, relaxed, one)
            .map_err(be)?;
        let [head, check, cont, merge] = [0; 4].map(|_| self.b.id());
        self.b.branch(head).map_err(be)?;
        self.b.begin_block(Some(head)).map_err(be)?;
        self.b
            .loop_merge(merge, cont, LoopControl::NONE, [])
            .map_err(be)?;
        self.b.branch(check).map_err(be)?;
        self.b.begin_block(Some(check)).map_err(be)?;
        let left = self
            .b
            .atomic_load(u, None, live, scope, relaxed)
            .map_err(be)?;
        let done = self.b.i_equal(tb, None, left, zero).map_err(be)?;
        self.b
            .branch_conditional(done, merge, cont, [])
            .map_err(be)?;
        self.b.begin_block(Some(cont)).map_err(be)?;
        self.workgroup_barrier()?;
        self.b.branch(head).map_err(be)?;
        self.b.begin_block(Some(merge)).map_err(be)?;
        self.b.ret().map_err(be)?;
        self.b.end_function().map_err(be)?;
        Ok(main)
    }
}
