//! The per-function builder: registers, code emission, scopes and locals, definite assignment,
//! ownership flags and drops. Statements and expressions are lowered in `stmt.rs`/`expr.rs`.
//!
//! Register discipline: locals get a register for their whole scope; temporaries are taken from
//! per-type free lists and returned at the end of each statement. A call window is always
//! allocated at the top of the register file, above every register allocated so far, so the
//! callee's frame (which starts at the window) never overlaps a live register of the caller.

use super::collect::{Job, JobKind, Program};
use super::ty::{self, Num, Ty};
use super::ConstPool;
use crate::ast::Unit;
use crate::diag::{code, Diag, Severity, SourceMap, Span};
use cajeta_bytecode::{
    Function, Instr, LineEntry, LocalName, Op, Operand, Region, RegionKind, Scalar, Type,
};
use std::collections::HashMap;

/// Register index.
pub type Reg = u16;

/// Whether a reference value carries a title (LANGUAGE §6.3).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Own {
    /// Borrowed (or not an owned kind).
    No,
    /// Statically owned (a creation expression).
    Yes,
    /// Owned iff this boolean register is true (a call result, `#v`).
    Dyn(Reg),
}

/// Where a value is.
#[derive(Clone, PartialEq, Debug)]
pub enum Loc {
    /// In a register.
    Reg(Reg),
    /// A numeric/boolean/char constant not yet materialised (cell bits for typed constants are
    /// computed from [`Num`] at materialisation).
    Num(Num),
    /// A boolean constant.
    Bool(bool),
    /// A char constant.
    Char(u32),
    /// A string constant.
    Str(String),
    /// `null`.
    Null,
    /// An enum constant (ordinal).
    Enum(u32),
    /// No value (void call or error).
    None,
}

/// A lowered expression.
#[derive(Clone, Debug)]
pub struct Val {
    /// Its type.
    pub ty: Ty,
    /// Where it is.
    pub loc: Loc,
    /// An untyped constant (LANGUAGE §3.3).
    pub untyped: bool,
    /// Ownership.
    pub own: Own,
}

impl Val {
    /// A value in a register.
    pub fn reg(ty: Ty, r: Reg) -> Val {
        Val {
            ty,
            loc: Loc::Reg(r),
            untyped: false,
            own: Own::No,
        }
    }

    /// The error value (a diagnostic was already reported).
    pub fn error() -> Val {
        Val {
            ty: Ty::Error,
            loc: Loc::None,
            untyped: false,
            own: Own::No,
        }
    }

    /// The `null` constant.
    pub fn null() -> Val {
        Val {
            ty: Ty::Null,
            loc: Loc::Null,
            untyped: false,
            own: Own::No,
        }
    }

    /// A constant numeric value, if this is one.
    pub fn num(&self) -> Option<Num> {
        self.num_exact().map(Num::plain)
    }

    /// The constant as written: a literal at a float16/bfloat16 rounding boundary keeps its
    /// [`Num::Dec`] form (only conversions to a numeric type should look).
    pub fn num_exact(&self) -> Option<Num> {
        match self.loc {
            Loc::Num(n) => Some(n),
            _ => None,
        }
    }
}

/// A local variable (or parameter).
#[derive(Clone, Debug)]
pub struct Local {
    /// Source name.
    pub name: String,
    /// Type.
    pub ty: Ty,
    /// Its register.
    pub reg: Reg,
    /// Owns-flag register for owned kinds.
    pub flag: Option<Reg>,
    /// `final`.
    pub is_final: bool,
    /// For a `final` local: the index of its *definitely unassigned* fact in the
    /// definite-assignment set (LANGUAGE §7, Java's rule: a final local is assigned only where
    /// it is definitely unassigned). Like assignment, the fact holds at a join only if it holds
    /// on every path, and vacuously where control cannot reach.
    pub unassigned: Option<usize>,
    /// Where it was last assigned (for the loop check of a `final` local).
    pub assigned_at: Option<Span>,
    /// Index into the definite-assignment set.
    pub da: usize,
    /// Statically known to own its object (initialised by a creation, an owned call result or
    /// a `#` transfer, and not transferred away since): what XPU-K02 checks at drops.
    pub static_owner: bool,
    /// A POD-class parameter of device code, flattened: one register per field.
    pub pod: Option<Vec<Reg>>,
}

/// A launch borrow recorded for XPU-K02 (XPU §4.2).
#[derive(Clone, Debug)]
pub struct Borrow {
    /// The buffer local.
    pub local: usize,
    /// The launched kernel's name.
    pub kernel: String,
    /// The launch's line.
    pub line: u32,
}

/// A lexical scope.
#[derive(Default, Debug)]
pub struct Scope {
    /// Locals declared in it, in order (indices into [`FnBuilder::locals`]).
    pub locals: Vec<usize>,
    /// Names visible in it.
    pub names: HashMap<String, usize>,
    /// Pending launch borrows recorded in this block (XPU-K02).
    pub borrows: Vec<Borrow>,
    /// Whether the scope is a block in the source (`{ … }`): XPU-K02's blocks. The scopes of
    /// an unbraced statement body or a `for` header are not (XPU §4.2 is lexical).
    pub braced: bool,
}

/// An enclosing loop, for `break`/`continue`.
#[derive(Debug)]
pub struct LoopCtx {
    /// Its label.
    pub label: Option<String>,
    /// Scope depth outside the loop (drops down to it on `break`).
    pub depth: usize,
    /// Scope depth of the body (drops down to it on `continue`).
    pub body_depth: usize,
    /// Jumps to patch to the merge point.
    pub breaks: Vec<usize>,
    /// Jumps to patch to the continue point.
    pub continues: Vec<usize>,
    /// Definite-assignment states at each `break` (intersected at the merge).
    pub break_da: Vec<Vec<bool>>,
    /// Definite-assignment states at each `continue` (intersected at the continue point).
    pub continue_da: Vec<Vec<bool>>,
    /// A `switch` (a `break` target only; `continue` skips it).
    pub is_switch: bool,
}

/// The kernel's dynamic shared array (XPU §2.6, T2; see `xpu.rs::dynamic_shared`).
#[derive(Debug)]
pub struct DynShared {
    /// Its int64 length register, `min(n, sharedBytes / sizeof(T))`.
    pub len: Reg,
    /// The declaration.
    pub span: Span,
}

/// Lowers one function.
pub struct FnBuilder<'a> {
    pub(super) p: &'a Program,
    pub(super) units: &'a [Unit],
    pub(super) sources: &'a SourceMap,
    pub(super) pool: &'a mut ConstPool,
    pub(super) job: Job,
    /// The unit of the function (for name resolution).
    pub(super) unit: usize,
    /// The class of the function.
    pub(super) class: u32,
    pub(super) regs: Vec<Type>,
    pub(super) code: Vec<Instr>,
    pub(super) lines: Vec<LineEntry>,
    pub(super) regions: Vec<Region>,
    pub(super) local_names: Vec<LocalName>,
    pub(super) locals: Vec<Local>,
    pub(super) scopes: Vec<Scope>,
    pub(super) loops: Vec<LoopCtx>,
    free: HashMap<Type, Vec<Reg>>,
    pub(super) temps: Vec<Reg>,
    pub(super) diags: Vec<Diag>,
    /// Definitely-assigned flags, by [`Local::da`].
    pub(super) da: Vec<bool>,
    /// Whether the current point is reachable.
    pub(super) reachable: bool,
    pub(super) pos: (u32, u32),
    /// Result type.
    pub(super) ret: Ty,
    /// `this` register (constructors).
    pub(super) this: Option<Reg>,
    /// In a drop function's destructor statements: the scope depth they start at and the
    /// jumps of their `return;`s, patched to the field drops that follow them (§6.5).
    pub(super) dtor_returns: Option<(usize, Vec<usize>)>,
    /// Number of parameter registers (declared + flags + this).
    nparams: u16,
    /// Flag registers of owned-kind parameters (dropped at return).
    pub(super) param_owned: Vec<usize>,
    /// Labels pending for the next loop statement.
    pub(super) pending_label: Option<String>,
    /// Whether this is device code (kernel or device function).
    pub(super) device: bool,
    overflowed: bool,
    /// True while lowering an expression statement that is a launch (XPU-N02 otherwise).
    pub(super) launch_statement: bool,
    /// Locals `0..param_locals` are the parameters.
    pub(super) param_locals: usize,
    /// Nesting of inlined `static final` initialisers in device code (bounded).
    pub(super) inline_depth: u32,
    /// Set when the expression just lowered called `KernelStream.sync()`.
    pub(super) synced: bool,
    /// Shared-memory declarations of a kernel, by `shared.ref` slot.
    pub(super) shared: Vec<cajeta_bytecode::SharedDecl>,
    /// int64 copies of integer locals used as indices, valid in straight-line code:
    /// (local register, int64 register, pc of the conversion). See [`FnBuilder::index_of_local`].
    pub(super) index_cache: Vec<(Reg, Reg, u32)>,
    /// The last pc that may be a jump target or follows a branch: cache entries made before it
    /// are stale. Updated by [`FnBuilder::pc`] (every captured pc may become a target) and by
    /// every branch emitted.
    pub(super) cache_barrier: std::cell::Cell<u32>,
    /// The last instruction, if it defined a single-use temporary (see `move_into`).
    pub(super) last_def: Option<(usize, Reg)>,
    /// `@Device` functions being inlined here, innermost last (see `inline.rs`).
    pub(super) inline_frames: Vec<super::inline::InlineFrame>,
    /// Owned values stored nowhere whose drop waits for the end of their full expression
    /// (LANGUAGE §6.4: the receiver of `heap T(…).m()`), innermost full expression last, each
    /// with the [`FnBuilder::conditional`] depth it began at (see `FnBuilder::drop_at_end`).
    pub(super) full_exprs: Vec<(u32, Vec<Val>)>,
    /// How many conditionally evaluated operands enclose the code being emitted (`?:` and
    /// switch-expression arms, right operands of `&&`/`||`): a value created there may not
    /// exist where the full expression that began outside them ends.
    pub(super) conditional: u32,
    /// Per enclosing conditional operand, innermost last: the (flag, value) registers of the
    /// values created in it whose drop waits for the end of the full expression (see
    /// [`FnBuilder::drop_at_end`]). Each conditional clears them on the paths that skip the
    /// operand.
    pub(super) cond_flags: Vec<Vec<(Reg, Reg)>>,
    /// The final fields a constructor (instance) or the class initialiser (static) assigns,
    /// with their *definitely assigned* and *definitely unassigned* facts in the
    /// definite-assignment set: assigned only where definitely unassigned, as a final local
    /// (see `FnBuilder::track_final_fields`).
    pub(super) final_fields: Vec<FinalField>,
    /// Scopes below this index are invisible to name lookup (the caller's, while a function
    /// body is inlined).
    pub(super) scope_floor: usize,
    /// The kernel's dynamic shared array, once declared.
    pub(super) dyn_shared: Option<DynShared>,
    /// Shared-array registers whose accesses the compiler checks, with their int64 length
    /// registers: the dynamic array (and copies of it), `Shared<T>` parameters of `@Device`
    /// functions (see [`FnBuilder::emit`]).
    pub(super) checked_mems: Vec<(Reg, Reg)>,
    /// The constructor this one chains to with `this(…)` (its function index), and where.
    pub chained: Option<(u32, Span)>,
    /// Calls expanded in place (`@Device` functions returning a Vector, see `inline.rs`).
    pub(super) inlined: Vec<cajeta_bytecode::InlinedCall>,
    /// Registers (value, then owns-flag) of owned locals declared in the groups of the switch
    /// statements being lowered, by declarator name: cleared before the switch dispatches,
    /// since a `case` may jump past the declaration (see `FnBuilder::switch_stmt`).
    pub(super) preset_flags: Vec<(Span, Reg, Reg)>,
}

impl<'a> FnBuilder<'a> {
    /// Starts a builder for one job.
    pub fn new(
        p: &'a Program,
        units: &'a [Unit],
        sources: &'a SourceMap,
        pool: &'a mut ConstPool,
        job: Job,
    ) -> Self {
        let class = job.class;
        let unit = p.classes[class as usize].unit;
        let device = job
            .sig
            .as_ref()
            .is_some_and(|s| s.kind != cajeta_bytecode::FnKind::Host);
        FnBuilder {
            p,
            units,
            sources,
            pool,
            ret: job.sig.as_ref().map_or(Ty::Void, |s| s.ret.clone()),
            job,
            unit,
            class,
            regs: vec![],
            code: vec![],
            lines: vec![],
            regions: vec![],
            local_names: vec![],
            locals: vec![],
            scopes: vec![],
            loops: vec![],
            free: HashMap::new(),
            preset_flags: vec![],
            inlined: vec![],
            temps: vec![],
            diags: vec![],
            da: vec![],
            reachable: true,
            pos: (0, 0),
            this: None,
            dtor_returns: None,
            nparams: 0,
            param_owned: vec![],
            pending_label: None,
            device,
            overflowed: false,
            last_def: None,
            index_cache: vec![],
            cache_barrier: std::cell::Cell::new(0),
            shared: vec![],
            launch_statement: false,
            param_locals: 0,
            inline_depth: 0,
            synced: false,
            inline_frames: vec![],
            full_exprs: vec![],
            conditional: 0,
            cond_flags: vec![],
            final_fields: vec![],
            scope_floor: 0,
            dyn_shared: None,
            checked_mems: vec![],
            chained: None,
        }
    }

    /// Lowers the body.
    pub fn lower(&mut self) {
        self.scopes.push(Scope::default());
        let job = self.job.clone();
        let sig = job.sig.clone();
        // Parameters: `this` (constructors), declared parameters, then owns-flags.
        // Constructors and instance methods receive `this` first.
        let instance = matches!(job.kind, JobKind::Ctor(_) | JobKind::Drop(_))
            || (matches!(job.kind, JobKind::Method(..))
                && sig.as_ref().is_some_and(|s| !s.is_static));
        if instance {
            let r = self.new_reg(Type::Object(self.class));
            self.this = Some(r);
        }
        let mut owned_params = vec![];
        if let Some(sig) = &sig {
            let decl_params: Vec<crate::ast::Param> = match job.kind {
                JobKind::Method(u, c, m) | JobKind::Ctor(Some((u, c, m))) => {
                    match &self.units[u].classes[c].members[m] {
                        crate::ast::Member::Method(md) => md.params.clone(),
                        crate::ast::Member::Constructor(cd) => cd.params.clone(),
                        _ => vec![],
                    }
                }
                _ => vec![],
            };
            for (i, (name, ty)) in sig.params.iter().enumerate() {
                if let (Ty::Class(c), true) = (ty, self.device) {
                    // Device code receives POD objects flattened to their fields.
                    let fields: Vec<Type> = self.p.classes[*c as usize]
                        .fields
                        .iter()
                        .map(|f| f.ty.reg())
                        .collect();
                    let regs: Vec<Reg> = fields.into_iter().map(|t| self.new_reg(t)).collect();
                    let span = decl_params.get(i).map(|p| p.name.span).unwrap_or_default();
                    if let Some(li) = self.add_local(
                        name,
                        ty.clone(),
                        regs.first().copied().unwrap_or(0),
                        true,
                        span,
                    ) {
                        self.mark_assigned(li);
                        self.locals[li].pod = Some(regs);
                    }
                    continue;
                }
                // A shared array parameter of a device function is the array and its int64
                // length (checked at each access, see `emit`).
                if let Ty::Shared(s) = ty {
                    let r = self.new_reg(Type::Shared(*s));
                    let len = self.new_reg(Type::I64);
                    self.checked_mems.push((r, len));
                    let span = decl_params.get(i).map(|p| p.name.span).unwrap_or_default();
                    if let Some(li) = self.add_local(name, ty.clone(), r, false, span) {
                        self.mark_assigned(li);
                    }
                    continue;
                }
                // A vector parameter is its lanes, consecutive (see `vector.rs`).
                let r = match ty {
                    Ty::Vector(s, n) => self.vec_block(*s, *n as usize),
                    _ => self.new_reg(ty.reg()),
                };
                let span = decl_params.get(i).map(|p| p.name.span).unwrap_or_default();
                let is_final = decl_params.get(i).is_some_and(|p| p.is_final);
                let li = self.add_local(name, ty.clone(), r, is_final, span);
                if let Some(li) = li {
                    self.mark_assigned(li);
                    if ty.is_owned_kind() && !self.device {
                        owned_params.push(li);
                    }
                }
            }
            for &li in &owned_params {
                let f = self.new_reg(Type::BOOL);
                self.locals[li].flag = Some(f);
            }
        }
        self.param_owned = owned_params;
        self.param_locals = self.locals.len();
        self.nparams = self.regs.len() as u16;
        match job.kind.clone() {
            JobKind::Clinit => self.lower_clinit(),
            JobKind::Clfini => self.lower_clfini(),
            JobKind::Drop(dtor) => self.lower_drop_fn(dtor),
            JobKind::Ctor(None) => {
                self.lower_field_inits();
                self.emit(Op::RetVoid, 0, 0, 0);
                self.reachable = false;
            }
            JobKind::Ctor(Some((u, c, m))) => {
                if let crate::ast::Member::Constructor(cd) = &self.units[u].classes[c].members[m] {
                    let body = cd.body.clone();
                    // `this(…)` first (§5.5, T2): the chosen constructor initialises the
                    // fields; otherwise this one does, before its body.
                    let rest = match body.stmts.split_first() {
                        Some((first, rest)) if chain_args(first).is_some() => {
                            self.chain_constructor(first);
                            self.track_final_fields(false, true);
                            rest
                        }
                        _ => {
                            self.lower_field_inits();
                            self.track_final_fields(false, false);
                            &body.stmts[..]
                        }
                    };
                    self.block_stmts(rest);
                    if self.reachable {
                        self.set_pos(closing_brace(body.span));
                        self.emit_return_drops();
                        self.emit(Op::RetVoid, 0, 0, 0);
                    }
                }
            }
            JobKind::Method(u, c, m) => {
                if let crate::ast::Member::Method(md) = &self.units[u].classes[c].members[m] {
                    let body = md.body.clone();
                    self.set_pos(body.span);
                    // A kernel's annotations lead its code (V-KATTR); malformed ones were
                    // reported with the signature.
                    if sig
                        .as_ref()
                        .is_some_and(|s| s.kind == cajeta_bytecode::FnKind::Kernel)
                    {
                        let attrs = super::xpu_t2::kernel_attrs(&md.annotations);
                        for (attr, value) in attrs.unwrap_or_default() {
                            self.emit(Op::KernelAttr, 0, attr, value);
                        }
                    }
                    self.block_stmts(&body.stmts);
                    let close = closing_brace(body.span);
                    if self.reachable {
                        self.check_pending_drops(0, close);
                    }
                    if self.reachable {
                        if self.ret == Ty::Void {
                            self.set_pos(close);
                            self.emit_return_drops();
                            self.emit(Op::RetVoid, 0, 0, 0);
                        } else {
                            self.error(
                                code::MISSING_RETURN,
                                md.name.span,
                                format!(
                                    "method '{}' can complete without returning a value",
                                    md.name.name
                                ),
                            );
                        }
                    }
                }
            }
        }
        let len = self.code.len() as u32;
        let jumps_to_end = self.code.iter().any(|i| i.op.is_branch() && i.bc() >= len);
        if jumps_to_end || self.code.last().is_none_or(|i| !i.op.is_terminator()) {
            // Unreachable end (after a return, or an error): keep the verifier's invariant that
            // code ends in a terminator.
            self.emit_unreachable_end();
        }
    }

    fn emit_unreachable_end(&mut self) {
        if self.ret == Ty::Void {
            self.emit(Op::RetVoid, 0, 0, 0);
        } else {
            let t = self.ret.reg();
            let r = self.new_reg(t);
            self.clear_reg(r, t);
            self.emit(Op::Ret, r, 0, 0);
        }
    }

    fn lower_clinit(&mut self) {
        self.track_final_fields(true, false);
        let c = &self.p.classes[self.class as usize];
        let decl = &self.units[c.unit].classes[c.index];
        for m in &decl.members {
            if let crate::ast::Member::StaticInit(b) = m {
                self.reachable = true;
                self.push_block_scope();
                self.block_stmts(&b.stmts);
                self.pop_scope_at(Some(closing_brace(b.span)));
                continue;
            }
            if let crate::ast::Member::Field(f) = m {
                if !f.modifiers.is_static {
                    continue;
                }
                for (name, init) in &f.vars {
                    let Some(init) = init else { continue };
                    let Some(&si) = c
                        .statics
                        .iter()
                        .find(|&&s| self.p.statics[s as usize].name == name.name)
                    else {
                        continue;
                    };
                    let ty = self.p.statics[si as usize].ty.clone();
                    self.set_pos(init.span);
                    let v = self.expr_for(init, &ty);
                    let own = v.own;
                    if let Some(r) = self.coerce(v, &ty, init.span) {
                        self.store_static(si, r, own);
                    }
                    self.end_statement();
                }
            }
        }
        self.emit(Op::RetVoid, 0, 0, 0);
        self.reachable = false;
    }

    /// The class's `<clfini>`, run at the normal end of the program (LANGUAGE §5.8 step 4):
    /// each static of an owned kind, last declared first, drops what it owns (destructors
    /// included, §6.5) and becomes a borrow, so the VM's final sweep leaves it alone.
    fn lower_clfini(&mut self) {
        let c = &self.p.classes[self.class as usize];
        let decl = &self.units[c.unit].classes[c.index];
        let mut owned = Vec::new();
        for m in &decl.members {
            let crate::ast::Member::Field(f) = m else {
                continue;
            };
            if !f.modifiers.is_static {
                continue;
            }
            for (name, _) in &f.vars {
                let si = c
                    .statics
                    .iter()
                    .copied()
                    .find(|&s| self.p.statics[s as usize].name == name.name);
                if let Some(si) = si {
                    if let Some(flag) = self.static_flag(si) {
                        owned.push((si, flag, name.span));
                    }
                }
            }
        }
        for (si, flag, span) in owned.into_iter().rev() {
            self.set_pos(span);
            let ty = self.p.statics[si as usize].ty.clone();
            let (v, owns) = (self.temp(ty.reg()), self.temp(Type::BOOL));
            self.emit(Op::GetStatic, v, si as u16, 0);
            self.emit(Op::GetStatic, owns, flag as u16, 0);
            self.emit_drop(v, owns, &ty);
            let no = self.load_bool(false);
            self.emit(Op::SetStatic, no, flag as u16, 0);
        }
        self.emit(Op::RetVoid, 0, 0, 0);
        self.reachable = false;
    }

    /// `this(args);` as a constructor's first statement: the constructor of this class
    /// chosen by the arguments (§8.4), called on `this`. A chain that comes back to where it
    /// started is reported once every constructor is lowered (`check::constructor_cycles`).
    fn chain_constructor(&mut self, stmt: &crate::ast::Stmt) {
        let Some(args) = chain_args(stmt) else {
            return;
        };
        self.set_pos(stmt.span);
        let ctors = self.p.classes[self.class as usize].ctors.clone();
        let vals = self.eval_args_for(args, &ctors);
        let Some(sig) = self.resolve_overload(&ctors, args, &vals, stmt.span, true) else {
            return;
        };
        self.chained = Some((sig.func, stmt.span));
        let this = self.this.unwrap_or(0);
        self.emit_call(&sig, Some((this, self.class)), vals, args, stmt.span);
        self.end_statement();
    }

    fn lower_field_inits(&mut self) {
        let c = &self.p.classes[self.class as usize];
        let decl = &self.units[c.unit].classes[c.index];
        let this = self.this.unwrap_or(0);
        for m in &decl.members {
            if let crate::ast::Member::Field(f) = m {
                if f.modifiers.is_static {
                    continue;
                }
                for (name, init) in &f.vars {
                    let Some(init) = init else { continue };
                    let Some(fi) = c.fields.iter().position(|x| x.name == name.name) else {
                        continue;
                    };
                    let ty = c.fields[fi].ty.clone();
                    self.set_pos(init.span);
                    let v = self.expr_for(init, &ty);
                    let own = v.own;
                    if let Some(r) = self.coerce(v, &ty, init.span) {
                        self.store_field(this, fi as u16, r, own);
                    }
                    self.end_statement();
                }
            }
        }
    }

    /// Finishes: the function and its diagnostics.
    pub fn finish(mut self) -> (Function, Vec<Diag>) {
        // Regions are recorded when a construct ends (inner first); the table is ordered by
        // header, outer regions first.
        self.regions
            .sort_by_key(|r| (r.header, std::cmp::Reverse(r.merge)));
        let shell = &self.p.functions[self.job.func as usize];
        let f = Function {
            name: shell.name.clone(),
            kind: shell.kind,
            params: self.nparams,
            ret: if self.ret == Ty::Void {
                None
            } else {
                Some(self.ret.reg())
            },
            regs: self.regs,
            code: self.code,
            file: shell.file,
            lines: self.lines,
            regions: self.regions,
            locals: self.local_names,
            shared: self.shared,
            inlined: self.inlined,
        };
        (f, self.diags)
    }

    // ----- diagnostics -----

    /// Reports an error.
    pub fn error(&mut self, code: &'static str, span: Span, msg: impl Into<String>) {
        self.diags.push(Diag::error(code, span, msg));
    }

    /// Reports a warning (shown by `cajeta check`).
    pub fn warn(&mut self, code: &'static str, span: Span, msg: impl Into<String>) {
        self.diags.push(Diag {
            severity: Severity::Warning,
            ..Diag::warning(code, span, msg)
        });
    }

    // ----- registers -----

    /// A fresh register of this type that lives for the whole function.
    pub fn new_reg(&mut self, t: Type) -> Reg {
        if self.regs.len() >= 60000 {
            if !self.overflowed {
                self.overflowed = true;
                self.diags.push(Diag::unlocated(
                    code::NOT_IMPLEMENTED,
                    "function too large (register limit)",
                ));
            }
            return 0;
        }
        self.regs.push(t);
        (self.regs.len() - 1) as Reg
    }

    /// A temporary register, released at the end of the statement.
    pub fn temp(&mut self, t: Type) -> Reg {
        let r = match self.free.get_mut(&t).and_then(|v| v.pop()) {
            Some(r) => r,
            None => self.new_reg(t),
        };
        self.temps.push(r);
        r
    }

    /// `n` consecutive fresh registers of the given types at the top (a call window).
    pub fn window(&mut self, types: &[Type]) -> Reg {
        let base = self.regs.len() as Reg;
        for &t in types {
            let r = self.new_reg(t);
            self.temps.push(r);
        }
        base
    }

    /// Releases this statement's temporaries.
    pub fn end_statement(&mut self) {
        for r in std::mem::take(&mut self.temps) {
            let t = self.regs[r as usize];
            self.free.entry(t).or_default().push(r);
        }
    }

    // ----- emission -----

    /// Sets the source position of the following instructions.
    pub fn set_pos(&mut self, span: Span) {
        self.pos = self.line_col(span);
    }

    fn line_col(&self, span: Span) -> (u32, u32) {
        self.sources.file(span.file).line_col(span.start)
    }

    /// Forgets cached conversions of `local` (it is being written).
    pub fn forget_index(&mut self, local: Reg) {
        self.index_cache.retain(|(l, _, _)| *l != local);
    }

    /// The int64 length register the compiler checks accesses through shared register `r`
    /// against, if it has one (see `checked_mems`).
    pub fn mem_len_reg(&self, r: Reg) -> Option<Reg> {
        self.checked_mems
            .iter()
            .rev()
            .find(|(m, _)| *m == r)
            .map(|&(_, len)| len)
    }

    /// Appends an instruction. An element access through a register of `checked_mems` is
    /// preceded by its `chk.idx` (the dynamic array's length is per item, unlike its
    /// memory's; a `Shared<T>` parameter carries its array's); a copy of such a register is
    /// checked alike.
    pub fn emit(&mut self, op: Op, a: Reg, b: u16, c: u16) -> usize {
        if !self.checked_mems.is_empty() {
            let m = op.mnemonic();
            let (mem, idx) = if m.starts_with("st.") { (a, b) } else { (b, c) };
            if op == Op::Mov {
                if let Some(len) = self.mem_len_reg(b) {
                    self.checked_mems.push((a, len));
                }
            } else if m.starts_with("ld.") || m.starts_with("st.") || m.starts_with("atom.") {
                if let Some(len) = self.mem_len_reg(mem) {
                    self.emit(Op::CheckIndex, idx, len, mem);
                }
            }
        }
        let pc = self.code.len() as u32;
        if self
            .lines
            .last()
            .is_none_or(|e| (e.line, e.col) != self.pos)
        {
            if self.lines.last().is_some_and(|e| e.pc == pc) {
                self.lines.pop();
            }
            self.lines.push(LineEntry {
                pc,
                line: self.pos.0,
                col: self.pos.1,
            });
        }
        self.code.push(Instr::new(op, a, b, c));
        self.last_def = None;
        if op.is_branch() || op.is_terminator() {
            self.cache_barrier.set(self.code.len() as u32);
        }
        // Any write to a cached local's register invalidates its copies.
        if !self.index_cache.is_empty() {
            if let [Operand::Dst(_), ..] = op.operands() {
                self.forget_index(a);
            }
        }
        pc as usize
    }

    /// Appends an instruction with a 32-bit immediate.
    pub fn emit_bc(&mut self, op: Op, a: Reg, bc: u32) -> usize {
        let pc = self.emit(op, a, 0, 0);
        self.code[pc].set_bc(bc);
        pc
    }

    /// The pc of the next instruction.
    pub fn pc(&self) -> u32 {
        // Any captured pc may become a jump target: cached values computed before it are not
        // known to hold there.
        self.cache_barrier.set(self.code.len() as u32);
        self.code.len() as u32
    }

    /// An int64 register holding the value of integer local register `local` (for indexing),
    /// reusing the conversion made earlier in the same straight-line code.
    pub fn index_of_local(&mut self, local: Reg) -> Reg {
        let barrier = self.cache_barrier.get();
        if let Some(&(_, r, _)) = self
            .index_cache
            .iter()
            .find(|(l, _, at)| *l == local && *at >= barrier)
        {
            return r;
        }
        let r = self.new_reg(Type::I64);
        let at = self.code.len() as u32;
        self.emit(Op::WrapI64, r, local, 0);
        self.index_cache.retain(|(l, _, _)| *l != local);
        self.index_cache.push((local, r, at));
        r
    }

    /// Patches a jump to target `to`.
    pub fn patch(&mut self, at: usize, to: u32) {
        self.code[at].set_bc(to);
    }

    /// Records a control-flow region.
    pub fn region(&mut self, kind: RegionKind, header: u32, cont: u32, merge: u32) {
        self.regions.push(Region {
            kind,
            header,
            merge,
            cont,
        });
    }

    // ----- constants -----

    /// Loads a cell constant into a new temporary of type `t`.
    pub fn load_bits(&mut self, t: Type, bits: u64) -> Reg {
        let r = self.temp(t);
        self.load_bits_into(r, t, bits);
        r
    }

    /// Loads a cell constant into `r`.
    pub fn load_bits_into(&mut self, r: Reg, t: Type, bits: u64) {
        let small = (bits as i64) >= i32::MIN as i64 && (bits as i64) <= i32::MAX as i64;
        let int_like = matches!(t, Type::Scalar(s) if !s.is_float());
        let pc = if int_like && small {
            self.emit_bc(Op::LoadI, r, bits as i64 as i32 as u32)
        } else {
            let k = self.pool.bits(bits);
            self.emit_bc(Op::LoadK, r, k)
        };
        self.last_def = Some((pc, r));
    }

    /// Writes the zero of `t` (null for a reference) into `r`.
    pub fn clear_reg(&mut self, r: Reg, t: Type) {
        if t.is_ref() {
            self.emit(Op::LoadNull, r, 0, 0);
        } else {
            self.load_bits_into(r, t, 0);
        }
    }

    /// Loads a string constant.
    pub fn load_str(&mut self, s: &str) -> Reg {
        let r = self.temp(Type::Str);
        let k = self.pool.str(s);
        self.emit_bc(Op::LoadK, r, k);
        r
    }

    /// Loads a boolean constant.
    pub fn load_bool(&mut self, v: bool) -> Reg {
        self.load_bits(Type::BOOL, v as u64)
    }

    // ----- scopes and locals -----

    /// Declares a local in the innermost scope. `None` (after a diagnostic) on a duplicate.
    pub fn add_local(
        &mut self,
        name: &str,
        ty: Ty,
        reg: Reg,
        is_final: bool,
        span: Span,
    ) -> Option<usize> {
        let scope = self.scopes.last_mut().expect("scope");
        if scope.names.contains_key(name) {
            self.error(
                code::VARIABLE_DUPLICATE,
                span,
                format!("'{name}' is already declared in this scope"),
            );
            return None;
        }
        let li = self.locals.len();
        let da = self.da.len();
        self.da.push(false);
        let unassigned = is_final.then(|| {
            self.da.push(true);
            da + 1
        });
        self.locals.push(Local {
            name: name.to_string(),
            ty,
            reg,
            flag: None,
            is_final,
            unassigned,
            assigned_at: None,
            da,
            static_owner: false,
            pod: None,
        });
        let scope = self.scopes.last_mut().expect("scope");
        scope.names.insert(name.to_string(), li);
        scope.locals.push(li);
        self.local_names.push(LocalName {
            reg,
            name: name.to_string(),
        });
        Some(li)
    }

    /// Records that local `li` is assigned here (definitely assigned, no longer definitely
    /// unassigned).
    pub fn mark_assigned(&mut self, li: usize) {
        let l = &self.locals[li];
        self.da[l.da] = true;
        if let Some(u) = l.unassigned {
            self.da[u] = false;
        }
    }

    /// Finds a visible local.
    pub fn lookup_local(&self, name: &str) -> Option<usize> {
        self.scopes[self.scope_floor.min(self.scopes.len())..]
            .iter()
            .rev()
            .find_map(|s| s.names.get(name).copied())
    }

    /// Opens a scope.
    pub fn push_scope(&mut self) {
        self.scopes.push(Scope::default());
    }

    /// Opens the scope of a `{ … }` block (see [`Scope::braced`]).
    pub fn push_block_scope(&mut self) {
        self.scopes.push(Scope {
            braced: true,
            ..Scope::default()
        });
    }

    /// The block XPU-K02 records and releases launch borrows in: the innermost `{ … }`
    /// (the function body's scope when there is none).
    fn borrow_block(&mut self) -> Option<&mut Scope> {
        let k = self.scopes.iter().rposition(|s| s.braced).unwrap_or(0);
        self.scopes.get_mut(k)
    }

    /// Closes a scope, emitting drops of its owning locals (reverse declaration order).
    pub fn pop_scope(&mut self) {
        self.pop_scope_at(None);
    }

    /// [`FnBuilder::pop_scope`] where `close` is the block's closing brace (for XPU-K02, and
    /// the position of the drops: a destructor's trace shows the caller at the brace).
    pub fn pop_scope_at(&mut self, close: Option<Span>) {
        if let Some(at) = close {
            if self.reachable {
                let depth = self.scopes.len() - 1;
                self.check_pending_drops(depth, at);
                self.set_pos(at);
            }
        }
        let scope = self.scopes.pop().expect("scope");
        if self.reachable {
            for &li in scope.locals.iter().rev() {
                self.drop_local(li);
            }
        }
    }

    /// Emits the drop of one local if it owns its object.
    pub fn drop_local(&mut self, li: usize) {
        if let Some(f) = self.locals[li].flag {
            let r = self.locals[li].reg;
            let ty = self.locals[li].ty.clone();
            self.emit_drop(r, f, &ty);
        }
    }

    /// Drops the object in `r` if the owns-flag `f` is set (LANGUAGE §6.5): an instance of a
    /// class with a destructor or owning fields first runs the class's drop function.
    /// An array whose elements need user code at their drop (destructors) first drops its
    /// owning elements, last index first ([`FnBuilder::emit_array_drop`]).
    pub fn emit_drop(&mut self, r: Reg, f: Reg, ty: &Ty) {
        if let Ty::Array(elem) = ty {
            if self.needs_drop_code(elem) {
                let elem = (**elem).clone();
                self.emit_array_drop(r, f, &elem);
                return;
            }
        }
        let drop_fn = match ty {
            Ty::Class(c) => self.p.classes[*c as usize].drop_fn.map(|d| (d, *c)),
            _ => None,
        };
        let Some((func, class)) = drop_fn else {
            self.emit(Op::Drop, r, f, 0);
            return;
        };
        let skip = self.emit_bc(Op::JmpIfNot, f, 0);
        let again = self.mark_dropping(r, class);
        let window = self.window(&[Type::Object(class)]);
        self.emit(Op::Mov, window, r, 0);
        self.emit(Op::Call, 0, window, func as u16);
        self.emit(Op::Drop, r, f, 0);
        let merge = self.pc();
        self.patch(skip, merge);
        if let Some(j) = again {
            self.patch(j, merge);
            self.region(RegionKind::If, j as u32, 0, merge);
        }
        self.region(RegionKind::If, skip as u32, 0, merge);
    }

    /// Marks the instance of `class` in `r` as being dropped, for a class that can own itself
    /// (one with the hidden `$dropping` field): the jump to take when it already was. An object
    /// whose drop has begun is reached again only through an ownership cycle (its own field,
    /// or a field of what it owns), and that drop is the one under way.
    fn mark_dropping(&mut self, r: Reg, class: u32) -> Option<usize> {
        let fi = self.p.classes[class as usize]
            .fields
            .iter()
            .position(|x| x.name == super::collect::DROPPING_FIELD)? as u16;
        let d = self.temp(Type::BOOL);
        self.emit(Op::GetField, d, r, fi);
        let again = self.emit_bc(Op::JmpIf, d, 0);
        let yes = self.load_bool(true);
        self.emit(Op::SetField, r, fi, yes);
        Some(again)
    }

    /// True if dropping a `ty` runs user code: an instance of a class with a drop function
    /// (destructor or owning fields), or an array of such (whose owning elements run it).
    fn needs_drop_code(&self, ty: &Ty) -> bool {
        match ty {
            Ty::Class(c) => self.p.classes[*c as usize].drop_fn.is_some(),
            Ty::Array(e) => self.needs_drop_code(e),
            _ => false,
        }
    }

    /// Drops the array in `r` (elements `elem`) if the owns-flag `f` is set, first dropping
    /// each element it owns, last index first (LANGUAGE §6.5):
    ///
    /// ```text
    ///         jmpifnot f, end
    /// head:   aown.take e, r        ; highest owning element, its flag cleared (null: none)
    ///         eq.ref    n, e, null
    ///         jmpif     n, out
    ///         <drop e>              ; destructor, then what its fields own
    /// cont:   jmp head
    /// out:    drop r, f             ; the array itself (and any owning elements left)
    /// end:
    /// ```
    fn emit_array_drop(&mut self, r: Reg, f: Reg, elem: &Ty) {
        let skip = self.emit_bc(Op::JmpIfNot, f, 0);
        let head = self.pc();
        let e = self.temp(elem.reg());
        self.emit(Op::ArrOwnTake, e, r, 0);
        let null = self.temp(elem.reg());
        self.emit(Op::LoadNull, null, 0, 0);
        let none = self.temp(Type::BOOL);
        self.emit(Op::EqRef, none, e, null);
        let exit = self.emit_bc(Op::JmpIf, none, 0);
        let owns = self.load_bool(true);
        self.emit_drop(e, owns, elem);
        let cont = self.pc();
        self.emit_bc(Op::Jmp, 0, head);
        let out = self.pc();
        self.patch(exit, out);
        self.region(RegionKind::Loop, head, cont, out);
        self.emit(Op::Drop, r, f, 0);
        let end = self.pc();
        self.patch(skip, end);
        self.region(RegionKind::If, skip as u32, 0, end);
    }

    /// `arr[idx] = r` with ownership (LANGUAGE §6.2–6.3): an element of an owned kind has an
    /// owns-flag kept with the array (`aown.get`/`aown.set`); the object it owned before is
    /// dropped after the value is computed, before the store, as for fields.
    pub fn store_elem(&mut self, arr: Reg, idx: Reg, r: Reg, own: Own, elem: &Ty) {
        if !elem.is_owned_kind() {
            self.emit(Op::ArrSetRef, arr, idx, r);
            return;
        }
        self.drop_slot(
            elem,
            |b, old, old_flag| {
                b.emit(Op::ArrGetRef, old, arr, idx);
                b.emit(Op::ArrOwnGet, old_flag, arr, idx);
            },
            |b, none| {
                b.emit(Op::ArrOwnSet, arr, idx, none);
            },
        );
        self.init_elem(arr, idx, r, own, elem);
    }

    /// Stores `r` into element `idx` of `arr`, which owns nothing yet (a fresh array: the
    /// items of an array literal), giving the element `own`'s mode.
    pub fn init_elem(&mut self, arr: Reg, idx: Reg, r: Reg, own: Own, elem: &Ty) {
        self.emit(Op::ArrSetRef, arr, idx, r);
        if !elem.is_owned_kind() {
            return;
        }
        let flag = match own {
            Own::No => self.load_bool(false),
            Own::Yes => self.load_bool(true),
            Own::Dyn(d) => d,
        };
        self.emit(Op::ArrOwnSet, arr, idx, flag);
    }

    /// `obj.field = r` with ownership: a field of an owned kind has a hidden owns-flag; the
    /// object it owned before is dropped after the value is computed, before the store.
    pub fn store_field(&mut self, obj: Reg, field: u16, r: Reg, own: Own) {
        let Type::Object(c) = self.regs[obj as usize] else {
            self.emit(Op::SetField, obj, field, r);
            return;
        };
        let fields = &self.p.classes[c as usize].fields;
        let f = &fields[field as usize];
        let flag_index = fields
            .iter()
            .position(|x| x.name == format!("$own.{}", f.name));
        let Some(flag_index) = flag_index else {
            self.emit(Op::SetField, obj, field, r);
            return;
        };
        let ty = f.ty.clone();
        let flag_index = flag_index as u16;
        self.drop_slot(
            &ty,
            |b, old, old_flag| {
                b.emit(Op::GetField, old, obj, field);
                b.emit(Op::GetField, old_flag, obj, flag_index);
            },
            |b, none| {
                b.emit(Op::SetField, obj, flag_index, none);
            },
        );
        self.emit(Op::SetField, obj, field, r);
        let flag = match own {
            Own::No => self.load_bool(false),
            Own::Yes => self.load_bool(true),
            Own::Dyn(d) => d,
        };
        self.emit(Op::SetField, obj, flag_index, flag);
    }

    /// `Cls.f = r` with ownership: a static of an owned kind has a hidden owns-flag (the
    /// static right after it, see `collect`); the object it owned before is dropped after the
    /// value is computed, before the store, as for fields (LANGUAGE §6.2–6.3).
    pub fn store_static(&mut self, si: u32, r: Reg, own: Own) {
        let Some(flag) = self.static_flag(si) else {
            self.emit(Op::SetStatic, r, si as u16, 0);
            return;
        };
        let ty = self.p.statics[si as usize].ty.clone();
        self.drop_slot(
            &ty,
            |b, old, old_flag| {
                b.emit(Op::GetStatic, old, si as u16, 0);
                b.emit(Op::GetStatic, old_flag, flag as u16, 0);
            },
            |b, none| {
                b.emit(Op::SetStatic, none, flag as u16, 0);
            },
        );
        self.emit(Op::SetStatic, r, si as u16, 0);
        let owns = match own {
            Own::No => self.load_bool(false),
            Own::Yes => self.load_bool(true),
            Own::Dyn(d) => d,
        };
        self.emit(Op::SetStatic, owns, flag as u16, 0);
    }

    /// Drops what an owning slot (a field or a static of type `ty`) holds, before a store
    /// into it: `read` loads its value and owns-flag, `clear` stores a false flag. The slot
    /// owns nothing while the old object drops: a destructor's error stops the store (a REPL
    /// session goes on with the slot as it is then), and no object drops twice (LANGUAGE
    /// §6.5). When the drop can run code, a destructor may store a new owned object into the
    /// slot: the slot is read again, and dropped, until it owns nothing (§6.2).
    fn drop_slot(
        &mut self,
        ty: &Ty,
        read: impl Fn(&mut Self, Reg, Reg),
        clear: impl Fn(&mut Self, Reg),
    ) {
        let (old, old_flag) = (self.temp(ty.reg()), self.temp(Type::BOOL));
        let runs_code = self.needs_drop_code(ty);
        let head = self.pc();
        read(self, old, old_flag);
        let none = self.load_bool(false);
        clear(self, none);
        if !runs_code {
            self.emit_drop(old, old_flag, ty);
            return;
        }
        let done = self.emit_bc(Op::JmpIfNot, old_flag, 0);
        self.emit_drop(old, old_flag, ty);
        self.emit_bc(Op::Jmp, 0, head);
        let end = self.pc();
        self.patch(done, end);
    }

    /// The hidden owns-flag of static `si` (the static right after it, see `collect`), if
    /// it is of an owned kind.
    pub(super) fn static_flag(&self, si: u32) -> Option<u32> {
        let st = &self.p.statics[si as usize];
        let flag = self.p.statics.get(si as usize + 1)?;
        (flag.name == format!("$own.{}", st.name) && flag.class == st.class).then_some(si + 1)
    }

    /// The body of `pkg.Class.~Class`: the destructor's statements, then the drops of what the
    /// fields own, last field first (LANGUAGE §6.5). `return;` in the destructor ends only its
    /// statements ([`FnBuilder::dtor_returns`]).
    ///
    /// The first owning field, when it holds this same class (a list's `next`), is followed
    /// in a loop rather than by a recursive call, so that dropping a long chain does not
    /// exhaust the call depth. It is the last field dropped, so the destructors run in the
    /// same order as the recursion would run them; each object after the first is freed once
    /// its fields are dropped (the caller frees the first):
    ///
    /// ```text
    ///         mov      first, this
    /// head:   <destructor statements>
    ///         <drop every other owning field, last first>
    ///         getfield v, this.next ; getfield f, this.$own.next
    ///         eq.ref   same, this, first
    ///         jmpif    same, keep
    ///         drop     this, true
    /// keep:   jmpifnot f, end       ; (and a null v, or a v whose drop is under way)
    ///         mov      this, v
    /// cont:   jmp      head
    /// end:    ret
    /// ```
    fn lower_drop_fn(&mut self, dtor: Option<(usize, usize, usize)>) {
        let this = self.this.unwrap_or(0);
        let class = self.class;
        let fields = self.p.classes[class as usize].fields.clone();
        let owning: Vec<(usize, usize)> = fields
            .iter()
            .enumerate()
            .filter_map(|(fi, f)| {
                let own = format!("$own.{}", f.name);
                fields
                    .iter()
                    .position(|x| x.name == own)
                    .map(|flag| (fi, flag))
            })
            .collect();
        let chain = owning
            .first()
            .copied()
            .filter(|&(fi, _)| fields[fi].ty == Ty::Class(class));
        let first = chain.map(|_| {
            let r = self.new_reg(Type::Object(class));
            self.emit(Op::Mov, r, this, 0);
            r
        });
        let head = self.pc();
        if let Some((u, c, m)) = dtor {
            if let crate::ast::Member::Destructor(d) = &self.units[u].classes[c].members[m] {
                let body = d.body.clone();
                self.dtor_returns = Some((self.scopes.len(), vec![]));
                self.push_block_scope();
                self.block_stmts(&body.stmts);
                if self.reachable {
                    self.pop_scope_at(Some(closing_brace(body.span)));
                } else {
                    self.scopes.pop();
                }
                let end = self.pc();
                let (_, returns) = self.dtor_returns.take().unwrap_or_default();
                for j in returns {
                    self.patch(j, end);
                }
                self.reachable = true;
            }
        }
        for &(fi, flag_index) in owning.iter().rev() {
            if Some((fi, flag_index)) == chain {
                continue;
            }
            self.set_pos(self.field_span(fi));
            let v = self.temp(fields[fi].ty.reg());
            let flag = self.temp(Type::BOOL);
            self.emit(Op::GetField, v, this, fi as u16);
            self.emit(Op::GetField, flag, this, flag_index as u16);
            self.emit_drop(v, flag, &fields[fi].ty);
            self.end_statement();
        }
        if let (Some((fi, flag_index)), Some(first)) = (chain, first) {
            self.set_pos(self.field_span(fi));
            let v = self.new_reg(Type::Object(class));
            let flag = self.new_reg(Type::BOOL);
            self.emit(Op::GetField, v, this, fi as u16);
            self.emit(Op::GetField, flag, this, flag_index as u16);
            let same = self.temp(Type::BOOL);
            self.emit(Op::EqRef, same, this, first);
            let keep = self.emit_bc(Op::JmpIf, same, 0);
            let yes = self.load_bool(true);
            self.emit(Op::Drop, this, yes, 0);
            let at_keep = self.pc();
            self.patch(keep, at_keep);
            self.region(RegionKind::If, keep as u32, 0, at_keep);
            let mut exits = vec![self.emit_bc(Op::JmpIfNot, flag, 0)];
            let null = self.temp(Type::Object(class));
            self.emit(Op::LoadNull, null, 0, 0);
            let none = self.temp(Type::BOOL);
            self.emit(Op::EqRef, none, v, null);
            exits.push(self.emit_bc(Op::JmpIf, none, 0));
            exits.extend(self.mark_dropping(v, class));
            self.emit(Op::Mov, this, v, 0);
            self.end_statement();
            let cont = self.pc();
            self.emit_bc(Op::Jmp, 0, head);
            let end = self.pc();
            for j in exits {
                self.patch(j, end);
            }
            self.region(RegionKind::Loop, head, cont, end);
        }
        self.emit(Op::RetVoid, 0, 0, 0);
        self.reachable = false;
    }

    /// Where field `fi` of the current class is declared (the position of the frames of its
    /// drop); the class's name when it is not found.
    fn field_span(&self, fi: usize) -> Span {
        let cls = &self.p.classes[self.class as usize];
        match self.field_declarator(self.class, &cls.fields[fi].name, false) {
            Some((n, _)) => n.span,
            None => self.units[cls.unit].classes[cls.index].name.span,
        }
    }

    /// The declarator `name (= init)?` of the static or instance field `name` of `class`.
    pub(super) fn field_declarator(
        &self,
        class: u32,
        name: &str,
        is_static: bool,
    ) -> Option<&'a (crate::ast::Ident, Option<crate::ast::Expr>)> {
        let cls = &self.p.classes[class as usize];
        let units: &'a [crate::ast::Unit] = self.units;
        units[cls.unit].classes[cls.index]
            .members
            .iter()
            .find_map(|m| match m {
                crate::ast::Member::Field(f) if f.modifiers.is_static == is_static => {
                    f.vars.iter().find(|(n, _)| n.name == name)
                }
                _ => None,
            })
    }

    /// The current source line.
    pub fn pos_line(&self) -> u32 {
        self.pos.0
    }

    /// Records a launch borrow of buffer local `li` in the innermost block.
    pub fn record_borrow(&mut self, li: usize, kernel: &str, line: u32) {
        if let Some(scope) = self.borrow_block() {
            scope.borrows.push(Borrow {
                local: li,
                kernel: kernel.to_string(),
                line,
            });
        }
    }

    /// `sync()` as an expression statement releases the innermost block's borrows.
    pub fn release_borrows(&mut self) {
        if let Some(s) = self.borrow_block() {
            s.borrows.clear();
        }
    }

    /// XPU-K02 (a): `v.free();` directly in the block of a pending borrow of `v`.
    pub fn check_free_borrowed(&mut self, li: usize, at: Span) {
        let pending = self
            .borrow_block()
            .and_then(|s| s.borrows.iter().find(|b| b.local == li).cloned());
        if let Some(b) = pending {
            let name = self.locals[li].name.clone();
            self.error(code::XPU_K02, at, format!(
                "buffer '{name}' is freed while the launch of '{}' (line {}) may still use it; call sync() first",
                b.kernel, b.line
            ));
            // Reported once: not again where the block ends.
            if let Some(s) = self.borrow_block() {
                s.borrows.retain(|x| x.local != li);
            }
        }
    }

    /// XPU-K02 (b): control leaves the scopes `depth..` at `at`: a pending borrow of a local
    /// declared in its own block that statically owns its buffer is an error.
    pub fn check_pending_drops(&mut self, depth: usize, at: Span) {
        let mut found = vec![];
        // Loop bodies too (§4.2 (b)): the discarding of a loop body's pending borrows at its
        // end concerns buffers declared outside it, which are not checked here anyway.
        for scope in &self.scopes[depth.min(self.scopes.len())..] {
            for b in &scope.borrows {
                if scope.locals.contains(&b.local) && self.locals[b.local].static_owner {
                    found.push(b.clone());
                }
            }
        }
        for b in found {
            let name = self.locals[b.local].name.clone();
            self.error(code::XPU_K02, at, format!(
                "buffer '{name}' is dropped while the launch of '{}' (line {}) may still use it; call sync() first",
                b.kernel, b.line
            ));
        }
    }

    /// Emits drops for every scope deeper than `depth` (innermost first), without closing them.
    pub fn drop_scopes_to(&mut self, depth: usize) {
        let lists: Vec<Vec<usize>> = self.scopes[depth..]
            .iter()
            .rev()
            .map(|s| s.locals.clone())
            .collect();
        for list in lists {
            for li in list.into_iter().rev() {
                self.drop_local(li);
            }
        }
    }

    /// Drops before a return: every scope (locals, then parameters, last first).
    pub fn emit_return_drops(&mut self) {
        // Scope 0 is the body's outermost block, shared with the parameters (LANGUAGE §5.7):
        // deeper scopes first, then its locals last-first, then owning parameters last-first.
        self.drop_scopes_to(1);
        let body: Vec<usize> = self.scopes[0]
            .locals
            .iter()
            .copied()
            .filter(|&li| li >= self.param_locals)
            .collect();
        for li in body.into_iter().rev() {
            self.drop_local(li);
        }
        let params = self.param_owned.clone();
        for li in params.into_iter().rev() {
            self.drop_local(li);
        }
    }

    // ----- conversions -----

    /// Materialises a value into a register of its own type.
    pub fn materialize(&mut self, v: &Val) -> Option<Reg> {
        match &v.loc {
            Loc::Reg(r) => Some(*r),
            Loc::Num(n) => {
                let s = v.ty.scalar()?;
                Some(self.load_bits(Type::Scalar(s), ty::const_cell(*n, s)))
            }
            Loc::Bool(b) => Some(self.load_bool(*b)),
            Loc::Char(c) => Some(self.load_bits(Type::Scalar(Scalar::Char), *c as u64)),
            Loc::Str(s) => Some(self.load_str(&s.clone())),
            Loc::Enum(o) => Some(self.load_bits(Type::I32, *o as u64)),
            Loc::Null => {
                let t = v.ty.reg();
                let r = self.temp(t);
                self.emit(Op::LoadNull, r, 0, 0);
                Some(r)
            }
            Loc::None => None,
        }
    }

    /// Converts a value for a conversion context (LANGUAGE §3.2) to `target`, returning a
    /// register of `target`'s register type. Reports `CAJETA_ERROR_TYPE_MISMATCH` otherwise.
    pub fn coerce(&mut self, v: Val, target: &Ty, span: Span) -> Option<Reg> {
        if v.ty == Ty::Error || *target == Ty::Error {
            return None;
        }
        if v.ty == Ty::Void {
            self.error(
                code::UNRESOLVED_EXPRESSION,
                span,
                "a void call has no value",
            );
            return None;
        }
        match (&v.ty, target) {
            (a, b) if a == b => self.materialize(&v),
            (Ty::Prim(from), Ty::Prim(to)) if from.is_numeric() && to.is_numeric() => {
                if let Some(n) = v.num_exact() {
                    if ty::const_conversion_is_lossy(n, *to) {
                        self.warn(
                            code::WARN_LOSSY_CONVERSION,
                            span,
                            format!("constant changes value when converted to {}", to.name()),
                        );
                    }
                    return Some(self.load_bits(Type::Scalar(*to), ty::const_cell(n, *to)));
                }
                if ty::conversion_is_lossy(*from, *to) {
                    self.warn(
                        code::WARN_LOSSY_CONVERSION,
                        span,
                        format!(
                            "implicit conversion from {} to {} may change the value",
                            from.name(),
                            to.name()
                        ),
                    );
                }
                let r = self.materialize(&v)?;
                Some(self.convert(r, *from, *to))
            }
            (Ty::Null, t) if t.is_ref() => {
                let r = self.temp(t.reg());
                self.emit(Op::LoadNull, r, 0, 0);
                Some(r)
            }
            (Ty::Enum(_), Ty::Prim(Scalar::I32)) => self.materialize(&v),
            (Ty::Vector(a, m), Ty::Vector(b, k)) if m == k && super::vector::half_pair(*a, *b) => {
                // float16/bfloat16 vectors compute in float32 and round per lane on store.
                let w = self.vec_convert(&v, *b)?;
                self.materialize(&w)
            }
            (Ty::Vector(..), _) | (_, Ty::Vector(..)) => {
                let from = v.ty.clone();
                self.vector_mismatch(&from, target, span, "cannot convert");
                None
            }
            _ => {
                let (a, b) = (self.ty_name(&v.ty), self.ty_name(target));
                self.error(
                    code::TYPE_MISMATCH,
                    span,
                    format!("cannot convert {a} to {b}"),
                );
                None
            }
        }
    }

    /// Emits the conversion of register `r` from scalar `from` to scalar `to` (cast rules).
    /// float16/bfloat16 go through float32 (widening is exact); narrowing to them rounds once
    /// from float32 or float64, integers going through float64 (exactly: 64-bit ones to
    /// bfloat16 with a sticky bit first, [`Self::sticky_low_bits`]; float16 overflows long
    /// before float64 rounds an integer).
    pub fn convert(&mut self, r: Reg, from: Scalar, to: Scalar) -> Reg {
        if from == to {
            return r;
        }
        if from.is_half() {
            let w = self.convert_step(r, from, Scalar::F32);
            return self.convert(w, Scalar::F32, to);
        }
        if to.is_half() {
            let via = if from == Scalar::F32 {
                Scalar::F32
            } else {
                Scalar::F64
            };
            let r = if to == Scalar::BF16 && matches!(from, Scalar::I64 | Scalar::U64) {
                self.sticky_low_bits(r, from)
            } else {
                r
            };
            let w = self.convert(r, from, via);
            return self.convert_step(w, via, to);
        }
        self.convert_step(r, from, to)
    }

    /// 64-bit integer `r` with its bits below 2^13 collapsed into a sticky bit at 2^13 when
    /// |r| ≥ 2^32 (`half::int_to_f64_sticky`), so that the float64 step of a conversion to
    /// bfloat16 is exact and bfloat16's rounding the only one (one rounding, LANGUAGE §3.1).
    /// On the two's complement bits of a negative value the collapse gives the magnitude's.
    fn sticky_low_bits(&mut self, r: Reg, from: Scalar) -> Reg {
        let (i64t, u64t) = (Type::Scalar(Scalar::I64), Type::Scalar(Scalar::U64));
        let signed = from == Scalar::I64;
        let s = if signed {
            r
        } else {
            self.convert_step(r, from, Scalar::I64)
        };
        // |v| < 2^32: (v + 2^32) as unsigned < 2^33 for int64, v < 2^32 for uint64.
        let probe = if signed {
            let k = self.load_bits(i64t, 1 << 32);
            let p = self.temp(i64t);
            self.emit(Op::AddI64, p, s, k);
            self.convert_step(p, Scalar::I64, Scalar::U64)
        } else {
            r
        };
        let limit = self.load_bits(u64t, if signed { 1 << 33 } else { 1 << 32 });
        let small = self.temp(Type::BOOL);
        self.emit(Op::LtU64, small, probe, limit);
        let d = self.temp(i64t);
        self.emit(Op::Mov, d, s, 0);
        let j = self.emit_bc(Op::JmpIf, small, 0);
        let low_mask = self.load_bits(i64t, 0x1FFF);
        let low = self.temp(i64t);
        self.emit(Op::AndI64, low, s, low_mask);
        // low + 0x1FFF reaches 2^13 exactly when low is not zero.
        self.emit(Op::AddI64, low, low, low_mask);
        let bit = self.load_bits(i64t, 0x2000);
        self.emit(Op::AndI64, low, low, bit);
        let high_mask = self.load_bits(i64t, !0x1FFFu64);
        self.emit(Op::AndI64, d, s, high_mask);
        self.emit(Op::OrI64, d, d, low);
        let merge = self.pc();
        self.patch(j, merge);
        self.region(cajeta_bytecode::RegionKind::If, j as u32, 0, merge);
        if signed {
            d
        } else {
            self.convert_step(d, Scalar::I64, Scalar::U64)
        }
    }

    /// One conversion instruction from `from` to `to`.
    fn convert_step(&mut self, r: Reg, from: Scalar, to: Scalar) -> Reg {
        let dst = self.temp(Type::Scalar(to));
        let op = conv_op(from, to);
        let pc = self.emit(op, dst, r, 0);
        self.last_def = Some((pc, dst));
        dst
    }

    /// A type's name for messages.
    pub fn ty_name(&self, t: &Ty) -> String {
        super::builtins::ty_name(self.p, t)
    }
}

/// The opcode converting scalar `from` to scalar `to` (both numeric or char; not equal). For
/// float16/bfloat16 it is the single step to or from float32 (or from float64): [`FnBuilder::convert`]
/// chains the steps.
pub fn conv_op(from: Scalar, to: Scalar) -> Op {
    use Scalar::*;
    let int_like = |s: Scalar| s.is_int() || s == Char;
    match (from, to) {
        (F16, _) => return Op::F16ToF32,
        (BF16, _) => return Op::BF16ToF32,
        (F32, F16) => return Op::F32ToF16,
        (F32, BF16) => return Op::F32ToBF16,
        (_, F16) => return Op::F64ToF16,
        (_, BF16) => return Op::F64ToBF16,
        _ => {}
    }
    if int_like(from) && int_like(to) {
        return match to {
            I8 => Op::WrapI8,
            U8 => Op::WrapU8,
            I16 => Op::WrapI16,
            U16 => Op::WrapU16,
            I32 => Op::WrapI32,
            U32 => Op::WrapU32,
            I64 => Op::WrapI64,
            U64 => Op::WrapU64,
            _ => Op::WrapChar,
        };
    }
    if int_like(from) {
        let signed = from.is_signed();
        return match (to, signed) {
            (F32, true) => Op::SToF32,
            (F32, false) => Op::UToF32,
            (_, true) => Op::SToF64,
            (_, false) => Op::UToF64,
        };
    }
    if to.is_float() {
        return if to == F64 {
            Op::F32ToF64
        } else {
            Op::F64ToF32
        };
    }
    let f32src = from == F32;
    match (to, f32src) {
        (I8, true) => Op::F32ToI8,
        (U8, true) => Op::F32ToU8,
        (I16, true) => Op::F32ToI16,
        (U16, true) => Op::F32ToU16,
        (I32, true) => Op::F32ToI32,
        (U32, true) => Op::F32ToU32,
        (I64, true) => Op::F32ToI64,
        (U64, true) => Op::F32ToU64,
        (I8, false) => Op::F64ToI8,
        (U8, false) => Op::F64ToU8,
        (I16, false) => Op::F64ToI16,
        (U16, false) => Op::F64ToU16,
        (I32, false) => Op::F64ToI32,
        (U32, false) => Op::F64ToU32,
        (I64, false) => Op::F64ToI64,
        (U64, false) => Op::F64ToU64,
        // Char targets: through uint32.
        (_, true) => Op::F32ToU32,
        (_, false) => Op::F64ToU32,
    }
}

/// A final field whose assignments a constructor or class initialiser tracks (see
/// `FnBuilder::track_final_fields`).
#[derive(Clone, Debug)]
pub struct FinalField {
    /// A static (in the class initialiser), or an instance field (in a constructor).
    pub is_static: bool,
    /// The field's name.
    pub name: String,
    /// Its *definitely assigned* fact.
    pub assigned: usize,
    /// Its *definitely unassigned* fact.
    pub unassigned: usize,
}

/// The arguments of a `this(…);` statement.
pub(super) fn chain_args(stmt: &crate::ast::Stmt) -> Option<&[crate::ast::Arg]> {
    match &stmt.kind {
        crate::ast::StmtKind::Expr(crate::ast::Expr {
            kind:
                crate::ast::ExprKind::Call {
                    target: None,
                    name,
                    args,
                    ..
                },
            ..
        }) if name.name == "this" => Some(args),
        _ => None,
    }
}

/// The span of a block's closing brace (its last byte).
pub(super) fn closing_brace(block: Span) -> Span {
    Span {
        start: block.end.saturating_sub(1),
        ..block
    }
}
