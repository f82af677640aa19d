//! SIMD lockstep functions: the lanes of a lockstep group (see [`super::lockstep`]) held in
//! 128-bit vectors, so that one machine instruction does the work of four lanes.
//!
//! A kernel qualifies when every register is a 32-bit scalar (`int32`, `uint32`, `char`,
//! `boolean`: four lanes per `i32x4`; `float32`: `f32x4`), a 64-bit integer (two lanes per
//! `i64x2`) or a memory handle that is the same in every lane (a buffer parameter, a copy of
//! one, a `shared.ref`), and every instruction is one [`plan`] accepts (which says what keeps
//! a kernel out, for `--xpu-verbose`). Everything else runs as scalar lockstep code, unchanged.
//!
//! The function has the interface of a scalar lockstep function (see [`crate::device`]): the
//! full groups of `W` items from `ctx.lin`, 0 at the end with the first item not run in
//! `ctx.lin`, or [`STOP_BAIL`] with every lane's live registers in its file; with resume points
//! (a kernel with barriers), the resumable group function of the same protocol. Results are
//! those of the scalar code, bit for bit: each lane performs the same IEEE operations on the
//! same values (vector `addps` rounds each lane as `addss` does; no contraction), integer
//! lanes wrap at their width as canonical cells do; division, remainder and shifts by each
//! lane's own amount run lane by lane.
//!
//! * **Control flow** is shared as in scalar lockstep: a branch on which every lane agrees is
//!   one branch (`vall_true`/`vany_true` of the condition vectors, or lane 0 alone for a
//!   uniform condition); lanes that disagree bail out, each continuing where its own
//!   condition leads.
//! * **Memory.** Every lane's index is checked before any lane's access, and a lane outside
//!   bails out — the item function then reports the fault of the first lane in item order, as
//!   the scheduler would. Consecutive indices (`i₀, i₀ + 1, …`: a grid-stride or global-id
//!   index) give one bounds check and one vector access per vector of lanes; the same index
//!   in every lane, one element; anything else, lanes gathered or scattered one by one, in
//!   lane order. Which case applies is tested lane by lane, or known from the lane facts
//!   (below).
//! * **Coordinates.** When the workgroup's x extent is a multiple of `W`, a group's lanes
//!   share y and z and have consecutive x (a vector of the first lane's x plus 0, 1, 2, …),
//!   carried from group to group without division; otherwise each lane's coordinates are
//!   counted on from the first one.
//! * **Aligned functions and scalar bases.** A kernel gets two SIMD functions (lockstep or
//!   barrier-group): one for launches whose x extent is a multiple of `W` (compiled first),
//!   and one for the others (compiled when a launch needs it). The aligned one knows the lane
//!   facts of `lanes_facts.rs` and holds each register twice, as vectors and as lane 0's
//!   scalar (its *base*); where a register's fact is uniform or affine its base is the whole
//!   register, and uniform and affine arithmetic (a grid-stride counter, a row offset, a loop
//!   bound) is scalar code, with vectors spread from the base only where a varying operation
//!   reads them. An affine index is one compare of its base with the buffer's run limit; an
//!   affine value compared with a uniform one (`i < n`) holds for a run of consecutive lanes,
//!   counted with scalar arithmetic, and a branch on that count needs no vector test.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types, Block, BlockArg, ConstantData, Endianness, InstBuilder, MemFlagsData, StackSlot,
    StackSlotData, StackSlotKind, Type as ClType, Value,
};
use cranelift_frontend::{FunctionBuilder, Variable};

use cajeta_bytecode::{Const, Function, Instr, MathFn, Module, Op, Scalar, Type};

use super::lanes_facts::Fact;
use super::lockstep::carry_coords;
use super::{leaders, Setup, I32, I64, MF};
use crate::device::{off as doff, STOP_BAIL};
use crate::liveness::{self, Regs};
use crate::loops;
use crate::JitError;
pub(crate) use turns::layout as turn_layout;
use turns::TurnLayout;

mod turns;

const I8X16: ClType = types::I8X16;
const I32X4: ClType = types::I32X4;
const I64X2: ClType = types::I64X2;
const F32X4: ClType = types::F32X4;

/// Lanes of a 32-bit vector.
const WORDS: usize = 4;

/// How a register is held across the lanes.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Class {
    /// 32-bit integer lanes; `int32` cells are sign-extended, the others zero-extended.
    Word { signed: bool },
    /// `float32` lanes.
    Float,
    /// 64-bit integer lanes, two per vector.
    Long,
    /// A buffer handle, the same in every lane.
    Handle,
}

impl Class {
    fn of(t: Type) -> Option<Class> {
        Some(match t {
            Type::Scalar(Scalar::I32) => Class::Word { signed: true },
            Type::Scalar(Scalar::U32 | Scalar::Char | Scalar::Bool) => {
                Class::Word { signed: false }
            }
            Type::Scalar(Scalar::F32) => Class::Float,
            Type::Scalar(Scalar::I64 | Scalar::U64) => Class::Long,
            Type::Buffer(_) | Type::Shared(_) => Class::Handle,
            _ => return None,
        })
    }

    fn is_word(self) -> bool {
        matches!(self, Class::Word { .. })
    }
}

/// A kernel that qualifies: each register's class and, for handle registers, the memory
/// they designate.
#[derive(Debug)]
pub(crate) struct Plan {
    classes: Vec<Class>,
    memory: Vec<Option<Memory>>,
    /// A kernel with workgroup barriers (compiled to a resumable group function).
    barriers: bool,
    /// See [`Plan::streams`]: the header of that loop (the last one in code order).
    stream_header: Option<u32>,
}

impl Plan {
    /// Whether the kernel (without barriers) has a loop whose state at its header is all
    /// uniform or affine registers in aligned groups — a grid-stride loop, say: wider groups
    /// hold that state in no more registers, amortise the loop's control over more lanes and
    /// touch longer runs of memory per iteration.
    pub(crate) fn streams(&self) -> bool {
        self.stream_header.is_some()
    }

    /// Whether the kernel can run its groups in turns (see `simd/turns.rs`): a streaming
    /// loop, and no shared memory (whose arrays are per workgroup, and turns mix
    /// workgroups).
    pub(crate) fn takes_turns(&self) -> bool {
        self.streams()
            && !self
                .memory
                .iter()
                .any(|m| matches!(m, Some(Memory::Shared(_))))
    }
}

/// The header of the last loop of kernel `f` (in code order: an inner loop's header follows
/// its outer loop's) whose live registers at its header (handles aside) are all uniform or
/// affine there.
fn stream_header(f: &Function, classes: &[Class]) -> Option<u32> {
    let facts = super::lanes_facts::facts(f, false);
    let live = liveness::live_in(f);
    let backward = |(pc, i): (usize, &Instr)| i.op.is_branch() && i.bc() as usize <= pc;
    f.code
        .iter()
        .enumerate()
        .filter(|&x| backward(x))
        .map(|(_, i)| i.bc())
        .filter(|&h| {
            let h = h as usize;
            let (Some(facts), Some(live)) = (facts.get(h), live.get(h)) else {
                return false;
            };
            (0..f.regs.len() as u16).all(|r| {
                let r_ = usize::from(r);
                !live.contains(r)
                    || classes[r_] == Class::Handle
                    || matches!(facts[r_], Fact::Uniform | Fact::Affine)
            })
        })
        .max()
}

/// The memory a handle register designates, the same in every lane.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Memory {
    /// The buffer of this parameter.
    Param(u16),
    /// The workgroup's shared array of this index (`shared.ref`).
    Shared(u16),
}

/// Whether kernel `f` (flattened) can run as SIMD lockstep code, and how; otherwise why not.
/// Workgroup barriers are allowed when `barriers` (a resumable group function).
pub(crate) fn plan(module: &Module, f: &Function, barriers: bool) -> Result<Plan, String> {
    let mut classes = Vec::with_capacity(f.regs.len());
    for (r, &t) in f.regs.iter().enumerate() {
        classes.push(Class::of(t).ok_or_else(|| format!("register r{r} is a {t:?}"))?);
    }
    let written = |r: u16| f.code.iter().any(|i| loops::writes(i, r));
    // Handles: buffer parameters never written, registers only ever written by a `mov` from
    // one (a for-each over a buffer copies it), and registers only ever written by the same
    // `shared.ref`.
    let mut memory = vec![None; f.regs.len()];
    for (r, class) in classes.iter().enumerate() {
        if *class != Class::Handle {
            continue;
        }
        let r = r as u16;
        if r < f.params {
            if written(r) {
                return Err(format!("buffer parameter r{r} is written"));
            }
            memory[usize::from(r)] = Some(Memory::Param(r));
            continue;
        }
        let mut sources = f
            .code
            .iter()
            .filter(|i| loops::writes(i, r))
            .map(|i| match i.op {
                Op::Mov if i.b < f.params && !written(i.b) => Some(Memory::Param(i.b)),
                Op::SharedRef => Some(Memory::Shared(i.b)),
                _ => None,
            });
        // (A register nothing writes designates no memory, and no access may use it.)
        let Some(first) = sources.next() else {
            continue;
        };
        match first.filter(|_| sources.all(|s| s == first)) {
            Some(m) => memory[usize::from(r)] = Some(m),
            None => return Err(format!("memory register r{r} is not one buffer or array")),
        }
    }
    let stream_header = match barriers {
        true => None,
        false => stream_header(f, &classes),
    };
    let plan = Plan {
        classes,
        memory,
        barriers,
        stream_header,
    };
    for (pc, &i) in f.code.iter().enumerate() {
        if !plan.supports(module, i) {
            return Err(format!("`{}` at pc {pc}", i.op.mnemonic()));
        }
    }
    Ok(plan)
}

impl Plan {
    fn class(&self, r: u16) -> Option<Class> {
        self.classes.get(usize::from(r)).copied()
    }

    /// Whether instruction `i` is lowered here with these register classes.
    fn supports(&self, module: &Module, i: Instr) -> bool {
        let (a, b, c) = (self.class(i.a), self.class(i.b), self.class(i.c));
        let word = |x: Option<Class>| x.is_some_and(Class::is_word);
        let float = |x: Option<Class>| x == Some(Class::Float);
        let long = |x: Option<Class>| x == Some(Class::Long);
        let zero_extended = |x: Option<Class>| x == Some(Class::Word { signed: false });
        let handle = |r: u16| self.memory.get(usize::from(r)).copied().flatten().is_some();
        match i.op {
            Op::Nop | Op::KernelAttr | Op::Fence | Op::Jmp | Op::RetVoid => true,
            Op::Barrier => self.barriers,
            Op::SharedRef => handle(i.a),
            Op::JmpIf | Op::JmpIfNot => word(a),
            Op::Mov => a.is_some() && a == b || word(a) && word(b),
            Op::LoadI => word(a) || long(a),
            // A cell constant (a float's bits, or an integer too wide for `loadi`).
            Op::LoadK => {
                a.is_some_and(|a| a != Class::Handle)
                    && matches!(module.consts.get(i.bc() as usize), Some(Const::Bits(_)))
            }
            Op::Geom => word(a) && i.b <= 15,
            Op::DevGetF32 | Op::DevGetI32 | Op::DevGetU32 | Op::DevGetI64 | Op::DevGetU64 => {
                handle(i.b) && long(c)
            }
            Op::DevSetF32 | Op::DevSetI32 | Op::DevSetU32 | Op::DevSetI64 | Op::DevSetU64 => {
                handle(i.a) && long(b)
            }
            Op::WrapI32 | Op::WrapU32 => word(b) || long(b),
            Op::WrapI64 | Op::WrapU64 => word(b) || long(b),
            Op::SToF32 => word(b),
            Op::UToF32 => zero_extended(b),
            Op::F32ToI32 | Op::F32ToU32 => float(b),
            Op::Math1F32 => matches!(
                MathFn::from_u16(i.c),
                Some(MathFn::Sqrt | MathFn::Abs | MathFn::Floor | MathFn::Ceil | MathFn::Trunc)
            ),
            Op::AddImmI32 => word(a),
            Op::AddImmI64 => long(a),
            Op::LNot => word(a),
            Op::BufLength => handle(i.b) && long(a),
            op => lane_op(op).is_some() || per_lane(op).is_some(),
        }
    }
}

/// The lane-wise binary and unary operations: what they compute, and on which lanes.
#[derive(Copy, Clone, Debug)]
enum LaneOp {
    /// A binary integer or float operation with a result of the operands' class.
    Arith(Arith, Lanes),
    /// A comparison, giving booleans.
    Cmp(Cmp, Lanes),
    /// A unary operation.
    Unary(Unary, Lanes),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Lanes {
    Word,
    Long,
    Float,
}

#[derive(Copy, Clone, Debug)]
enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    And,
    Or,
    Xor,
    Min { signed: bool },
    Max { signed: bool },
}

#[derive(Copy, Clone, Debug)]
enum Cmp {
    Int(IntCC),
    Float(FloatCC),
}

#[derive(Copy, Clone, Debug)]
enum Unary {
    Neg,
    Not,
}

fn lane_op(op: Op) -> Option<LaneOp> {
    use Arith::*;
    use LaneOp::{Arith as A, Cmp as C, Unary as U};
    let (w, l, f) = (Lanes::Word, Lanes::Long, Lanes::Float);
    let int = |cc| Cmp::Int(cc);
    Some(match op {
        Op::AddI32 | Op::AddU32 => A(Add, w),
        Op::SubI32 | Op::SubU32 => A(Sub, w),
        Op::MulI32 | Op::MulU32 => A(Mul, w),
        Op::AndI32 | Op::AndU32 | Op::AndBool => A(And, w),
        Op::OrI32 | Op::OrU32 | Op::OrBool => A(Or, w),
        Op::XorI32 | Op::XorU32 | Op::XorBool => A(Xor, w),
        Op::MinI32 => A(Min { signed: true }, w),
        Op::MaxI32 => A(Max { signed: true }, w),
        Op::MinU32 => A(Min { signed: false }, w),
        Op::MaxU32 => A(Max { signed: false }, w),
        Op::AddI64 | Op::AddU64 => A(Add, l),
        Op::SubI64 | Op::SubU64 => A(Sub, l),
        Op::MulI64 | Op::MulU64 => A(Mul, l),
        Op::AndI64 | Op::AndU64 => A(And, l),
        Op::OrI64 | Op::OrU64 => A(Or, l),
        Op::XorI64 | Op::XorU64 => A(Xor, l),
        Op::AddF32 => A(Add, f),
        Op::SubF32 => A(Sub, f),
        Op::MulF32 => A(Mul, f),
        Op::DivF32 => A(Div, f),
        Op::NegI32 | Op::NegU32 => U(Unary::Neg, w),
        Op::NotI32 | Op::NotU32 => U(Unary::Not, w),
        Op::NegI64 | Op::NegU64 => U(Unary::Neg, l),
        Op::NotI64 | Op::NotU64 => U(Unary::Not, l),
        Op::NegF32 => U(Unary::Neg, f),
        Op::EqBool | Op::EqChar | Op::EqI32 | Op::EqU32 => C(int(IntCC::Equal), w),
        Op::NeBool | Op::NeChar | Op::NeI32 | Op::NeU32 => C(int(IntCC::NotEqual), w),
        Op::LtI32 => C(int(IntCC::SignedLessThan), w),
        Op::LeI32 => C(int(IntCC::SignedLessThanOrEqual), w),
        Op::LtU32 => C(int(IntCC::UnsignedLessThan), w),
        Op::LeU32 => C(int(IntCC::UnsignedLessThanOrEqual), w),
        Op::EqI64 | Op::EqU64 => C(int(IntCC::Equal), l),
        Op::NeI64 | Op::NeU64 => C(int(IntCC::NotEqual), l),
        Op::LtI64 => C(int(IntCC::SignedLessThan), l),
        Op::LeI64 => C(int(IntCC::SignedLessThanOrEqual), l),
        Op::LtU64 => C(int(IntCC::UnsignedLessThan), l),
        Op::LeU64 => C(int(IntCC::UnsignedLessThanOrEqual), l),
        Op::EqF32 => C(Cmp::Float(FloatCC::Equal), f),
        Op::NeF32 => C(Cmp::Float(FloatCC::NotEqual), f),
        Op::LtF32 => C(Cmp::Float(FloatCC::LessThan), f),
        Op::LeF32 => C(Cmp::Float(FloatCC::LessThanOrEqual), f),
        _ => return None,
    })
}

/// Integer operations without a vector instruction (division, remainder, shifts by each
/// lane's own amount): computed lane by lane. The operand's width in bits, and the operation.
fn per_lane(op: Op) -> Option<(u32, PerLane)> {
    use PerLane::*;
    Some(match op {
        Op::DivI32 => (32, Div { signed: true }),
        Op::DivU32 => (32, Div { signed: false }),
        Op::RemI32 => (32, Rem { signed: true }),
        Op::RemU32 => (32, Rem { signed: false }),
        Op::DivI64 => (64, Div { signed: true }),
        Op::DivU64 => (64, Div { signed: false }),
        Op::RemI64 => (64, Rem { signed: true }),
        Op::RemU64 => (64, Rem { signed: false }),
        Op::ShlI32 | Op::ShlU32 => (32, Shl),
        Op::ShrI32 => (32, Sshr),
        Op::ShrU32 | Op::UshrI32 | Op::UshrU32 => (32, Ushr),
        Op::ShlI64 | Op::ShlU64 => (64, Shl),
        Op::ShrI64 => (64, Sshr),
        Op::ShrU64 | Op::UshrI64 | Op::UshrU64 => (64, Ushr),
        _ => return None,
    })
}

#[derive(Copy, Clone, Debug)]
enum PerLane {
    Div { signed: bool },
    Rem { signed: bool },
    Shl,
    Sshr,
    Ushr,
}

/// Whether instruction `i` at `pc` is a comparison [`Simd::affine_compare`] counts: an
/// integer `<` or `<=` between an affine and a uniform value (by the facts `facts`).
fn counts_lanes(plan: &Plan, facts: &[Vec<Fact>], pc: usize, i: Instr) -> bool {
    let Some(LaneOp::Cmp(Cmp::Int(cc), Lanes::Word | Lanes::Long)) = lane_op(i.op) else {
        return false;
    };
    let ordered = matches!(
        cc,
        IntCC::SignedLessThan
            | IntCC::SignedLessThanOrEqual
            | IntCC::UnsignedLessThan
            | IntCC::UnsignedLessThanOrEqual
    );
    let fact = |r: u16| {
        let held = plan.class(r).is_some_and(|c| c != Class::Handle);
        let fact = facts.get(pc).and_then(|f| f.get(usize::from(r))).copied();
        fact.filter(|_| held)
    };
    ordered
        && matches!(
            (fact(i.b), fact(i.c)),
            (Some(Fact::Affine), Some(Fact::Uniform)) | (Some(Fact::Uniform), Some(Fact::Affine))
        )
}

/// How a register is held at some point: by its base (with the fact that makes it whole),
/// or by its vectors.
enum Held {
    Base((Fact, Value)),
    Vectors(Vec<Value>),
}

/// A bail-out site, filled at the end: every lane's live registers to its file.
struct Bail {
    block: Block,
    pc: u32,
    /// After a divergent branch: the condition vectors, and the continuation (+ 1) of a lane
    /// whose condition holds, resp. does not.
    branch: Option<(Vec<Value>, i64, i64)>,
}

/// The translator of one SIMD lockstep function.
struct Simd<'a, 'b> {
    s: &'a Setup<'a>,
    f: &'a Function,
    plan: &'a Plan,
    b: FunctionBuilder<'b>,
    ctx: Value,
    /// Vectors of 32-bit lanes per register (`W / 4`); 64-bit registers have twice as many.
    chunks: usize,
    /// Per register: its vector variables (one scalar for a handle).
    vars: Vec<Vec<Variable>>,
    /// Per handle register: its buffer's (element address, length), read once.
    views: Vec<Option<(Value, Value)>>,
    /// Per handle register: the first elements at which a run of `W` elements lies inside
    /// the buffer are those below this (its length less `W − 1`, or 0).
    run_limits: Vec<Option<StackSlot>>,
    /// The item coordinates of the group's lanes (word vectors).
    item: [Vec<Variable>; 3],
    /// The launch's workgroup extent per axis.
    block: [Value; 3],
    /// The workgroup's coordinates and first global id per axis (32-bit).
    group: [Variable; 3],
    group_offset: [Variable; 3],
    /// The item coordinates of the group's first lane (valid in the aligned function).
    first: [Variable; 3],
    /// The linear index of the group's first item.
    lin0: Variable,
    /// The workgroups left to run, this one included (a lockstep function).
    left: Variable,
    blocks: Vec<Option<Block>>,
    /// Where `ret` goes: the next group.
    latch: Block,
    checks: bool,
    live: Vec<Regs>,
    bails: Vec<Bail>,
    /// A resumable group's continuation points.
    resume: Option<&'a [u32]>,
    /// What is known of each register's lanes before each instruction (only in the aligned
    /// function: see `lanes_facts`).
    facts: Vec<Vec<Fact>>,
    /// Per register (not a handle): lane 0's value, which is the whole register where its
    /// fact is uniform or affine. Written with the vectors; each use reads one or the other.
    bases: Vec<Option<Variable>>,
    /// The instruction being translated (whose facts say which of a register's variables
    /// hold it).
    pc: u32,
    /// The register it writes and the fact of the value, in the aligned function.
    written: Option<(u16, Fact)>,
    /// Which registers hold a counted comparison (see [`Simd::affine_compare`]) before each
    /// instruction, on every path (the aligned function; `lanes_facts::counted`).
    counted: Vec<Vec<bool>>,
    /// Per register that ever holds one: the run of lanes `lo ≤ j < hi` where it holds
    /// (32-bit scalars), for a branch on it.
    ranges: Vec<Option<[Variable; 2]>>,
    /// The launch frame's parameter cells.
    cells: Vec<Value>,
    /// A turn function's state (see `simd/turns.rs`).
    turns: Option<turns::Turns>,
}

/// Which of a kernel's SIMD functions to translate.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Variant {
    /// For launches whose workgroup x extent is a multiple of the width: it uses the lane
    /// facts that hold there (see `lanes_facts`; a group function's end at each barrier).
    Aligned,
    /// For the other launches, without lane facts.
    Unaligned,
    /// The turn function (see `simd/turns.rs`; aligned, not resumable).
    Turns,
    /// An aligned group function for groups that never left lockstep: its facts hold across
    /// barriers (a group that stops at one in lockstep stores the values lockstep computed),
    /// and a continuation loads a uniform or affine register from its first lane's file alone.
    Through,
}

/// Translates kernel `f` (`s.func`, which `plan` accepted) to a SIMD lockstep function of
/// `width` lanes (a multiple of 4), its `variant`; with `resume`, a resumable group function.
pub(crate) fn translate_simd(
    b: FunctionBuilder<'_>,
    s: &Setup<'_>,
    f: &Function,
    plan: &Plan,
    (width, resume, variant): (usize, Option<&[u32]>, Variant),
    checks: bool,
) -> Result<(), JitError> {
    let aligned = variant != Variant::Unaligned;
    let through = variant == Variant::Through;
    if width == 0 || !width.is_multiple_of(WORDS) {
        return Err(JitError::new(
            Some(s.func),
            None,
            format!("SIMD lockstep needs a multiple of {WORDS} lanes, not {width}"),
        ));
    }
    let turns = match variant == Variant::Turns {
        true => Some(
            turns::layout(f, plan)
                .filter(|_| aligned && resume.is_none())
                .ok_or_else(|| JitError::new(Some(s.func), None, "no turns here".into()))?,
        ),
        false => None,
    };
    let form = (width / WORDS, aligned, resume, turns);
    let mut t = Simd::prologue(b, s, f, plan, form, (checks, through));
    t.body()?;
    t.epilogue();
    t.b.seal_all_blocks();
    t.b.finalize(s.frontend);
    Ok(())
}

impl<'a, 'b> Simd<'a, 'b> {
    fn width(&self) -> usize {
        self.chunks * WORDS
    }

    /// The entry, the group loop and each group's fresh registers and coordinates; with
    /// `resume` (a kernel with barriers), the one group at `ctx.lin` from its lanes' register
    /// files, continuing at the start or at `resume[k - 1]` for `ctx.resume = k`; with
    /// `turns`, the groups of the turn slots taking turns.
    fn prologue(
        mut b: FunctionBuilder<'b>,
        s: &'a Setup<'a>,
        f: &'a Function,
        plan: &'a Plan,
        (chunks, aligned, resume, turns): (usize, bool, Option<&'a [u32]>, Option<TurnLayout>),
        (checks, through): (bool, bool),
    ) -> Simd<'a, 'b> {
        let width = chunks * WORDS;
        let super::device::Launch {
            ctx,
            block,
            mems,
            nmems,
            cells,
        } = super::device::kernel_entry(&mut b, f.params);
        let load = |b: &mut FunctionBuilder<'_>, offset: i32| b.ins().load(I64, MF, ctx, offset);
        let vars = plan
            .classes
            .iter()
            .map(|c| match c {
                Class::Word { .. } => (0..chunks).map(|_| b.declare_var(I32X4)).collect(),
                Class::Float => (0..chunks).map(|_| b.declare_var(F32X4)).collect(),
                Class::Long => (0..2 * chunks).map(|_| b.declare_var(I64X2)).collect(),
                Class::Handle => vec![b.declare_var(I64)],
            })
            .collect();
        let bases = plan
            .classes
            .iter()
            .map(|&c| (c != Class::Handle).then(|| b.declare_var(scalar_type(c))))
            .collect();
        let nbufs = load(&mut b, doff::NBUFS);
        let mut views = vec![None; f.regs.len()];
        let mut run_limits = vec![None; f.regs.len()];
        // Whether every handle names a memory of its element width. (A lockstep function
        // reads their lengths as stored and bails out before the first instruction if not —
        // `checked` below — rather than select a length of 0 that Cranelift recomputes at
        // every access.)
        let mut valid = b.ins().iconst(types::I8, 1);
        for (r, m) in plan.memory.iter().enumerate() {
            let (Some(m), Some(Type::Buffer(e) | Type::Shared(e))) = (*m, f.regs.get(r)) else {
                continue;
            };
            let handle = match m {
                Memory::Param(p) => cells[usize::from(p)],
                Memory::Shared(k) => b.ins().iadd_imm_s(nbufs, i64::from(k)),
            };
            let (addr, len) = match resume {
                Some(_) => super::device::mem_view(&mut b, mems, nmems, handle, e.size()),
                None => {
                    let view = super::device::lookup(&mut b, mems, nmems, handle, e.size(), true);
                    valid = b.ins().band(valid, view.2);
                    (view.0, view.1)
                }
            };
            views[r] = Some((addr, len));
            let span = width as i64 - 1;
            let at_least = b.ins().iconst(I64, span);
            let len = b.ins().umax(len, at_least);
            let limit = b.ins().iadd_imm_s(len, -span);
            // In a stack slot: Cranelift would recompute an expression with a constant at
            // every use, in the loops, rather than keep its value.
            let slot =
                b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 3));
            b.ins().stack_store(I64, limit, slot, 0);
            run_limits[r] = Some(slot);
        }
        let item: [Vec<Variable>; 3] =
            [(); 3].map(|_| (0..chunks).map(|_| b.declare_var(I32X4)).collect());
        // The first lane's coordinates (in an aligned group, x then counts up by lane and y
        // and z are shared).
        let first_coords = [(); 3].map(|_| b.declare_var(I32));
        let lin0 = b.declare_var(I64);
        let left = b.declare_var(I64);
        // The workgroup's coordinates and first global id per axis (read once; a turn
        // function sets them for each group it runs).
        let group = [(); 3].map(|_| b.declare_var(I32));
        let group_offset = [(); 3].map(|_| b.declare_var(I32));
        for axis in 0..3 {
            let g = load(&mut b, doff::GROUP + 8 * axis as i32);
            let g = b.ins().ireduce(I32, g);
            b.def_var(group[axis], g);
            let extent = b.ins().ireduce(I32, block[axis]);
            let offset = b.ins().imul(g, extent);
            b.def_var(group_offset[axis], offset);
        }

        let mut leader = leaders(f);
        // A resumable group continues at its resume points: each starts a block.
        for &pc in resume.unwrap_or_default() {
            if let Some(l) = leader.get_mut(pc as usize) {
                *l = true;
            }
        }
        let blocks = leader
            .iter()
            .map(|&l| l.then(|| b.create_block()))
            .collect();
        let latch = b.create_block();
        // (Then, before the groups: are the memory handles valid?)
        let checked = b.create_block();
        b.ins().jump(checked, &[]);

        let mut t = Simd {
            s,
            f,
            plan,
            b,
            ctx,
            chunks,
            block,
            vars,
            views,
            run_limits,
            item,
            first: first_coords,
            group,
            group_offset,
            lin0,
            left,
            blocks,
            latch,
            checks,
            live: liveness::live_in(f),
            bails: Vec::new(),
            resume,
            facts: match aligned {
                true => super::lanes_facts::facts(f, resume.is_some() && !through),
                false => Vec::new(),
            },
            bases,
            pc: 0,
            written: None,
            counted: Vec::new(),
            ranges: vec![None; f.regs.len()],
            cells,
            turns: None,
        };
        if !t.facts.is_empty() {
            // (Counted runs end at barriers even `through` them: files keep no runs.)
            let resumable = resume.is_some();
            t.counted = super::lanes_facts::counted(f, resumable, |pc, i| {
                counts_lanes(plan, &t.facts, pc, i)
            });
            for r in 0..f.regs.len() {
                if t.counted.iter().any(|at| at[r]) {
                    t.ranges[r] = Some([(); 2].map(|_| t.b.declare_var(I32)));
                }
            }
        }
        t.b.switch_to_block(checked);
        match turns {
            Some(layout) => t.turn_loop(valid, layout),
            None => t.group_loop(valid, aligned),
        }
        t
    }

    /// The group loop (from the `checked` block): the full groups from `ctx.lin` one after
    /// another — or, resumable, the one group at `ctx.lin` — each with its lanes'
    /// coordinates and fresh registers (resumable: its lanes' registers from their files, at
    /// its continuation).
    fn group_loop(&mut self, valid: Value, aligned: bool) {
        let (ctx, block, width, chunks) = (self.ctx, self.block, self.width(), self.chunks);
        let (lin0, latch, resume) = (self.lin0, self.latch, self.resume);
        let b = &mut self.b;
        let first = b.ins().load(I64, MF, ctx, doff::LIN);
        b.def_var(lin0, first);
        let workgroups = b.ins().load(I64, MF, ctx, doff::WORKGROUPS);
        b.def_var(self.left, workgroups);
        // The first lane's coordinates: by division once (not for a workgroup's first item,
        // where a call usually starts: three dependent divisions per workgroup otherwise),
        // then carried from group to group.
        let coords = [(); 3].map(|_| b.declare_var(I64));
        let (origin, divide, known) = (b.create_block(), b.create_block(), b.create_block());
        b.ins().brif(first, divide, &[], origin, &[]);
        b.switch_to_block(origin);
        let zero = b.ins().iconst(I64, 0);
        for v in &coords {
            b.def_var(*v, zero);
        }
        b.ins().jump(known, &[]);
        b.switch_to_block(divide);
        let start = super::lockstep::item_coords(b, first, block);
        for (v, x) in coords.iter().zip(start) {
            b.def_var(*v, x);
        }
        b.ins().jump(known, &[]);
        b.switch_to_block(known);

        let head = b.create_block();
        let fast = b.create_block();
        // (The aligned function has no use for the lane-by-lane coordinates.)
        let slow = (!aligned).then(|| b.create_block());
        let body = b.create_block();
        let exit = b.create_block();
        if resume.is_some() {
            b.ins().jump(head, &[]);
        } else {
            // A handle that names no memory of its width (never in a checked launch): every
            // group bails out before its first instruction, so that its items fault where
            // the item function's would.
            let invalid = b.create_block();
            b.set_cold_block(invalid);
            b.ins().brif(valid, head, &[], invalid, &[]);
            b.switch_to_block(invalid);
            self.fresh_lanes();
            let bail = self.bail(0, None);
            self.b.ins().jump(bail, &[]);
        }
        let b = &mut self.b;

        // Another full group?
        b.switch_to_block(head);
        let l0 = b.use_var(lin0);
        let xy = b.ins().imul(block[0], block[1]);
        let total = b.ins().imul(xy, block[2]);
        let end = b.ins().iadd_imm_s(l0, width as i64);
        let over = b.ins().icmp(IntCC::UnsignedGreaterThan, end, total);
        let go = b.create_block();
        // (A resumable group is always full.)
        let over = match resume {
            Some(_) => b.ins().iconst(types::I8, 0),
            None => over,
        };
        b.ins().brif(over, exit, &[], go, &[]);
        b.switch_to_block(go);
        match slow {
            // Consecutive x in every group when the x extent is a multiple of the width
            // (groups start at multiples of it).
            Some(slow) => {
                let rem = b.ins().urem_imm_s(block[0], width as i64);
                let consecutive = b.ins().icmp_imm_s(IntCC::Equal, rem, 0);
                b.ins().brif(consecutive, fast, &[], slow, &[]);
            }
            None => {
                b.ins().jump(fast, &[]);
            }
        }

        // Aligned: x = x₀ + (0, 1, 2, …), y and z shared; the next group's first lane is
        // `width` further along x.
        b.switch_to_block(fast);
        let [x0, y0, z0] = coords.map(|v| b.use_var(v));
        let first_lane = [x0, y0, z0].map(|v| b.ins().ireduce(I32, v));
        self.aligned_coords(first_lane);
        let b = &mut self.b;
        if aligned {
            // Along the row, and into the next one (y, z) only at its end (a branch rather
            // than the selects of every group).
            let x = b.ins().iadd_imm_s(x0, width as i64);
            let ends = b.ins().icmp(IntCC::Equal, x, block[0]);
            let (along, turn) = (b.create_block(), b.create_block());
            b.set_cold_block(turn);
            b.ins().brif(ends, turn, &[], along, &[]);
            b.switch_to_block(along);
            b.def_var(coords[0], x);
            b.ins().jump(body, &[]);
            b.switch_to_block(turn);
        }
        let next = carry_coords(b, [x0, y0, z0], block, width as i64);
        for (v, x) in coords.iter().zip(next) {
            b.def_var(*v, x);
        }
        b.ins().jump(body, &[]);

        // Otherwise lane by lane, counting on from the first lane (x fastest).
        if let Some(slow) = slow {
            b.switch_to_block(slow);
            let mut at = coords.map(|v| b.use_var(v));
            let mut lanes: [Vec<Value>; 3] = Default::default();
            for j in 0..=width {
                if j > 0 {
                    at = carry_coords(b, at, block, 1);
                }
                if j == width {
                    for (v, x) in coords.iter().zip(at) {
                        b.def_var(*v, x);
                    }
                    break;
                }
                for axis in 0..3 {
                    let w = b.ins().ireduce(I32, at[axis]);
                    lanes[axis].push(w);
                }
            }
            for axis in 0..3 {
                for c in 0..chunks {
                    let lanes = &lanes[axis][c * WORDS..(c + 1) * WORDS];
                    let v = build_vector(b, I32X4, lanes);
                    b.def_var(self.item[axis][c], v);
                }
            }
            b.ins().jump(body, &[]);
        }

        self.b.switch_to_block(body);
        if let Some(points) = resume {
            // Each continuation loads the registers live there from the lanes' files.
            // (A group only ever stops at barriers: the other points are the item function's.)
            let k = self.b.ins().load(I64, MF, ctx, doff::RESUME);
            for (n, &pc) in points.iter().enumerate() {
                let after_barrier = pc
                    .checked_sub(1)
                    .and_then(|p| self.f.code.get(p as usize))
                    .is_some_and(|i| i.op == Op::Barrier);
                let cont = self.blocks.get(pc as usize).copied().flatten();
                let Some(cont) = cont.filter(|_| after_barrier) else {
                    continue;
                };
                let here = self.b.ins().icmp_imm_s(IntCC::Equal, k, n as i64 + 1);
                let (loads, next) = (self.b.create_block(), self.b.create_block());
                self.b.ins().brif(here, loads, &[], next, &[]);
                self.b.switch_to_block(loads);
                self.lanes_from_files(pc);
                self.b.ins().jump(cont, &[]);
                self.b.switch_to_block(next);
            }
            // The start: the fresh item frame (the embedder fills no files for it).
            self.fresh_lanes();
            let first_block = self.blocks.first().copied().flatten().unwrap_or(latch);
            self.b.ins().jump(first_block, &[]);
            // Every lane returned.
            self.b.switch_to_block(latch);
            let done = self.b.ins().iconst(I32, 0);
            self.b.ins().return_(&[done]);
            self.b.switch_to_block(exit);
            self.b.ins().return_(&[done]);
            return;
        }
        self.fresh_lanes();
        let first_block = self.blocks.first().copied().flatten().unwrap_or(latch);
        self.b.ins().jump(first_block, &[]);

        self.b.switch_to_block(latch);
        super::lockstep::next_group(&mut self.b, lin0, width, head);
        // The workgroup's full groups done: on to the next workgroup while any is left (its
        // coordinates counted on along x, then y and z).
        self.b.switch_to_block(exit);
        let left = self.b.use_var(self.left);
        let (more, done) = (self.b.create_block(), self.b.create_block());
        let last = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedLessThanOrEqual, left, 1);
        self.b.ins().brif(last, done, &[], more, &[]);
        self.b.switch_to_block(more);
        let rest = self.b.ins().iadd_imm_s(left, -1);
        self.b.def_var(self.left, rest);
        let group = self.group.map(|v| {
            let g = self.b.use_var(v);
            self.b.ins().uextend(I64, g)
        });
        let grid = [0, 1, 2].map(|axis| self.b.ins().load(I64, MF, ctx, doff::GRID + 8 * axis));
        let next = carry_coords(&mut self.b, group, grid, 1);
        for axis in 0..3 {
            let g = self.b.ins().ireduce(I32, next[axis]);
            self.b.def_var(self.group[axis], g);
            let extent = self.b.ins().ireduce(I32, block[axis]);
            let offset = self.b.ins().imul(g, extent);
            self.b.def_var(self.group_offset[axis], offset);
        }
        let zero = self.b.ins().iconst(I64, 0);
        self.b.def_var(lin0, zero);
        for v in &coords {
            self.b.def_var(*v, zero);
        }
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(done);
        super::lockstep::groups_done(&mut self.b, ctx, lin0);
    }

    /// The coordinates of an aligned group whose first lane is at `first` (32-bit x, y, z):
    /// x = x₀ + (0, 1, 2, …), y and z shared.
    fn aligned_coords(&mut self, first: [Value; 3]) {
        let b = &mut self.b;
        for (var, &v) in self.first.iter().zip(&first) {
            b.def_var(*var, v);
        }
        let xs = b.ins().splat(I32X4, first[0]);
        let shared = [1, 2].map(|axis| b.ins().splat(I32X4, first[axis]));
        for (c, ((x, y), z)) in self.item[0]
            .iter()
            .zip(&self.item[1])
            .zip(&self.item[2])
            .enumerate()
        {
            let iota = word_iota(b, (c * WORDS) as i32);
            let xv = b.ins().iadd(xs, iota);
            b.def_var(*x, xv);
            b.def_var(*y, shared[0]);
            b.def_var(*z, shared[1]);
        }
    }

    /// The interpreter's fresh item frame in every lane: parameters from the launch frame,
    /// every other register 0.
    fn fresh_lanes(&mut self) {
        for r in 0..self.f.regs.len() {
            let cell = match self.cells.get(r) {
                Some(&cell) => cell,
                None => self.b.ins().iconst(I64, 0),
            };
            match self.plan.classes[r] {
                Class::Handle => {
                    let v = self.vars[r][0];
                    self.b.def_var(v, cell);
                }
                class => {
                    let v = self.splat_cell(class, cell);
                    for k in 0..self.vars[r].len() {
                        let var = self.vars[r][k];
                        self.b.def_var(var, v);
                    }
                    if let Some(base) = self.bases[r] {
                        let x = self.cell_scalar(class, cell);
                        self.b.def_var(base, x);
                    }
                }
            }
        }
    }

    /// Each lane's registers live at `pc` from its file at `ctx.regs`.
    fn lanes_from_files(&mut self, pc: u32) {
        let files = self.b.ins().load(I64, MF, self.ctx, doff::REGS);
        let stride = 8 * (self.f.regs.len() as i32 + 1);
        let live = self.live.get(pc as usize).cloned().unwrap_or_default();
        let width = self.width();
        for r in 0..self.f.regs.len() as u16 {
            if !live.contains(r) {
                continue;
            }
            let class = self.class(r);
            // A parameter nothing writes holds its launch value in every lane.
            if let Some(&cell) = self.cells.get(usize::from(r)) {
                if !self.f.code.iter().any(|i| loops::writes(i, r)) {
                    match class {
                        Class::Handle => self.set(r, &[cell]),
                        _ => {
                            let x = self.cell_scalar(class, cell);
                            self.set_base(r, Fact::Uniform, x);
                        }
                    }
                    continue;
                }
            }
            // Lane j's cell (little-endian: a 32-bit value is its first half).
            let at = |j: usize| stride * j as i32 + 8 * i32::from(r);
            // A uniform or affine register (facts through barriers): its first lane's.
            self.pc = pc;
            if let (Some(_), fact @ (Fact::Uniform | Fact::Affine)) =
                (self.bases[usize::from(r)], self.fact(pc, r))
            {
                let cell = self.b.ins().load(I64, MF, files, at(0));
                let base = self.cell_scalar(class, cell);
                self.set_base(r, fact, base);
                continue;
            }
            let (ty, lane_ty, per) = match class {
                // The same in every lane: lane 0's.
                Class::Handle => {
                    let v = self.b.ins().load(I64, MF, files, at(0));
                    self.set(r, &[v]);
                    continue;
                }
                Class::Long => (I64X2, I64, 2),
                Class::Word { .. } => (I32X4, I32, WORDS),
                Class::Float => (F32X4, types::F32, WORDS),
            };
            let lanes: Vec<Value> = (0..width)
                .map(|j| self.b.ins().load(lane_ty, MF, files, at(j)))
                .collect();
            let values: Vec<Value> = lanes
                .chunks(per)
                .map(|l| build_vector(&mut self.b, ty, l))
                .collect();
            self.set(r, &values);
        }
    }

    /// A barrier reached by every lane of a resumable group: each lane's live registers to
    /// its file, the continuation after the barrier to `ctx.resume` and the barrier's pc to
    /// `ctx.stop_pc`, then `STOP_RENDEZVOUS` (the embedder has each lane execute it).
    fn barrier(&mut self, pc: u32) -> Result<(), JitError> {
        let k = self
            .resume
            .and_then(|r| r.iter().position(|&c| c == pc + 1))
            .ok_or_else(|| self.err(pc, "no continuation after this barrier".into()))?;
        self.store_lanes(pc, None);
        super::device::stop_before_rendezvous(&mut self.b, self.ctx, pc, k);
        Ok(())
    }

    /// Every lane's value of a launch cell of a register of `class`.
    fn splat_cell(&mut self, class: Class, cell: Value) -> Value {
        let x = self.cell_scalar(class, cell);
        let ty = match class {
            Class::Word { .. } => I32X4,
            Class::Float => F32X4,
            Class::Long | Class::Handle => I64X2,
        };
        self.b.ins().splat(ty, x)
    }

    /// The cell of `loadk` `i`'s constant.
    fn constant_cell(&mut self, pc: u32, i: Instr) -> Result<Value, JitError> {
        match self.s.module.consts.get(i.bc() as usize) {
            Some(Const::Bits(bits)) => Ok(self.b.ins().iconst(I64, *bits as i64)),
            _ => Err(self.err(pc, "bad constant".into())),
        }
    }

    /// One lane's value of a launch cell of a register of `class`.
    fn cell_scalar(&mut self, class: Class, cell: Value) -> Value {
        let b = &mut self.b;
        match class {
            Class::Word { .. } => b.ins().ireduce(I32, cell),
            Class::Float => {
                let w = b.ins().ireduce(I32, cell);
                b.ins().bitcast(types::F32, MemFlagsData::new(), w)
            }
            Class::Long | Class::Handle => cell,
        }
    }

    fn body(&mut self) -> Result<(), JitError> {
        let f = self.f;
        let mut open = false;
        for (pc, &i) in f.code.iter().enumerate() {
            let pc = pc as u32;
            if let Some(block) = self.blocks[pc as usize] {
                if open {
                    let to = match self.turns.as_ref().filter(|t| t.header() == pc) {
                        Some(t) => t.arrival(pc.checked_sub(1)),
                        None => block,
                    };
                    self.b.ins().jump(to, &[]);
                }
                self.b.switch_to_block(block);
                open = true;
            }
            if !open {
                continue;
            }
            open = !self.instr(pc, i)?;
        }
        if open {
            return Err(self.err(f.code.len() as u32, "code runs off its end".into()));
        }
        Ok(())
    }

    fn err(&self, pc: u32, msg: String) -> JitError {
        JitError::new(Some(self.s.func), Some(pc), msg)
    }

    /// Register `r`'s lanes as vectors (spread from its base where that holds it, or from
    /// the run of lanes where the comparison it holds is true).
    fn get(&mut self, r: u16) -> Vec<Value> {
        if let Some((fact, base)) = self.base(r) {
            return self.spread(self.class(r), fact, base);
        }
        if let Some([lo, hi]) = self.ranges[usize::from(r)].filter(|_| self.is_counted(self.pc, r))
        {
            let (lo, hi) = (self.b.use_var(lo), self.b.use_var(hi));
            return self.run_lanes(lo, hi);
        }
        let vars = self.vars[usize::from(r)].clone();
        vars.into_iter().map(|v| self.b.use_var(v)).collect()
    }

    /// Register `r`'s fact and base before the current instruction, when the fact is
    /// uniform or affine (the base then holds the register).
    fn base(&mut self, r: u16) -> Option<(Fact, Value)> {
        let fact = self.fact(self.pc, r);
        if !matches!(fact, Fact::Uniform | Fact::Affine) {
            return None;
        }
        let var = self.bases.get(usize::from(r)).copied().flatten()?;
        Some((fact, self.b.use_var(var)))
    }

    /// The vectors of a register of `class` whose lane 0 is `base`: `base` in every lane
    /// (uniform), or `base + j` in lane `j` (affine, wrapping at the register's width).
    fn spread(&mut self, class: Class, fact: Fact, base: Value) -> Vec<Value> {
        let affine = fact == Fact::Affine;
        match class {
            Class::Long => {
                let v = self.b.ins().splat(I64X2, base);
                (0..2 * self.chunks)
                    .map(|k| match affine {
                        true => {
                            let iota = long_iota(&mut self.b, 2 * k as i64);
                            self.b.ins().iadd(v, iota)
                        }
                        false => v,
                    })
                    .collect()
            }
            Class::Float => vec![self.b.ins().splat(F32X4, base); self.chunks],
            _ => {
                let v = self.b.ins().splat(I32X4, base);
                (0..self.chunks)
                    .map(|c| match affine {
                        true => {
                            let iota = word_iota(&mut self.b, (c * WORDS) as i32);
                            self.b.ins().iadd(v, iota)
                        }
                        false => v,
                    })
                    .collect()
            }
        }
    }

    /// Writes register `r`'s vectors and, when the current instruction's value is uniform
    /// or affine, its base (lane 0).
    fn set(&mut self, r: u16, values: &[Value]) {
        for (k, &v) in values.iter().enumerate() {
            let var = self.vars[usize::from(r)][k];
            self.b.def_var(var, v);
        }
        let holds = matches!(self.written, Some((d, Fact::Uniform | Fact::Affine)) if d == r);
        if let (true, Some(base), Some(&first)) =
            (holds, self.bases[usize::from(r)], values.first())
        {
            let x = self.b.ins().extractlane(first, 0);
            self.b.def_var(base, x);
        }
    }

    /// Writes register `r` from its base (the current instruction's value is uniform or
    /// affine): the base, and the vectors spread from it (unused ones cost nothing).
    fn set_base(&mut self, r: u16, fact: Fact, base: Value) {
        let values = self.spread(self.class(r), fact, base);
        for (k, &v) in values.iter().enumerate() {
            let var = self.vars[usize::from(r)][k];
            self.b.def_var(var, v);
        }
        if let Some(var) = self.bases[usize::from(r)] {
            self.b.def_var(var, base);
        }
    }

    fn class(&self, r: u16) -> Class {
        self.plan.classes[usize::from(r)]
    }

    /// What is known of register `r`'s lanes before the instruction at `pc`.
    fn fact(&self, pc: u32, r: u16) -> Fact {
        self.facts
            .get(pc as usize)
            .and_then(|f| f.get(usize::from(r)))
            .copied()
            .unwrap_or(Fact::Varying)
    }

    /// One instruction; `true` if it ends the block.
    fn instr(&mut self, pc: u32, i: Instr) -> Result<bool, JitError> {
        self.pc = pc;
        self.written = self
            .facts
            .get(pc as usize)
            .and_then(|before| super::lanes_facts::written(i, before));
        if let Some((dst, fact @ (Fact::Uniform | Fact::Affine))) = self.written {
            if let Some(base) = self.scalar(pc, i, fact)? {
                self.set_base(dst, fact, base);
                return Ok(false);
            }
        }
        match i.op {
            Op::Nop | Op::KernelAttr => {}
            // Orders this group's own accesses, as for one item.
            Op::Fence => {
                self.b.ins().fence();
            }
            Op::Barrier => {
                self.barrier(pc)?;
                return Ok(true);
            }
            Op::SharedRef => {
                let nbufs = self.b.ins().load(I64, MF, self.ctx, doff::NBUFS);
                let h = self.b.ins().iadd_imm_s(nbufs, i64::from(i.b));
                self.set(i.a, &[h]);
            }
            Op::Jmp => {
                let t = self.block(i.bc())?;
                self.b.ins().jump(t, &[]);
                return Ok(true);
            }
            Op::RetVoid => {
                self.b.ins().jump(self.latch, &[]);
                return Ok(true);
            }
            Op::JmpIf | Op::JmpIfNot => {
                self.branch(pc, i)?;
                return Ok(true);
            }
            Op::Mov => {
                let v = self.get(i.b);
                self.set(i.a, &v);
                if let (true, Some(from), Some(to)) = (
                    self.is_counted(pc, i.b),
                    self.ranges[usize::from(i.b)],
                    self.ranges[usize::from(i.a)],
                ) {
                    for (t, f) in to.iter().zip(from) {
                        let x = self.b.use_var(f);
                        self.b.def_var(*t, x);
                    }
                }
            }
            Op::LoadI => {
                let v = i64::from(i.bc() as i32);
                let values = self.constant(self.class(i.a), v);
                self.set(i.a, &values);
            }
            Op::LoadK => {
                let x = self.constant_cell(pc, i)?;
                let v = self.splat_cell(self.class(i.a), x);
                let values = vec![v; self.vars[usize::from(i.a)].len()];
                self.set(i.a, &values);
            }
            Op::Geom => {
                let v = self.geom(i.b)?;
                self.set(i.a, &v);
            }
            Op::AddImmI32 | Op::AddImmI64 => {
                let k = i64::from(i.c as i16);
                self.with_constant(i, k, |b, x, k| b.ins().iadd(x, k));
            }
            // Booleans are 0 or 1.
            Op::LNot => self.with_constant(i, 1, |b, x, k| b.ins().bxor(x, k)),
            Op::WrapI32 | Op::WrapU32 => {
                let v = match self.class(i.b) {
                    // Same 32 bits; only their reading changes.
                    Class::Word { .. } => self.get(i.b),
                    _ => {
                        let x = self.get(i.b);
                        self.narrow(&x)
                    }
                };
                self.set(i.a, &v);
            }
            Op::WrapI64 | Op::WrapU64 => {
                let v = match self.class(i.b) {
                    Class::Word { signed } => {
                        let x = self.get(i.b);
                        self.widen(&x, signed)
                    }
                    _ => self.get(i.b),
                };
                self.set(i.a, &v);
            }
            Op::SToF32 | Op::UToF32 => {
                let signed = self.class(i.b) == Class::Word { signed: true };
                let x = self.get(i.b);
                let v: Vec<Value> = x
                    .into_iter()
                    .map(|x| match signed {
                        true => self.b.ins().fcvt_from_sint(F32X4, x),
                        false => self.b.ins().fcvt_from_uint(F32X4, x),
                    })
                    .collect();
                self.set(i.a, &v);
            }
            Op::F32ToI32 | Op::F32ToU32 => {
                let x = self.get(i.b);
                let v: Vec<Value> = x
                    .into_iter()
                    .map(|x| match i.op {
                        Op::F32ToI32 => self.b.ins().fcvt_to_sint_sat(I32X4, x),
                        _ => self.b.ins().fcvt_to_uint_sat(I32X4, x),
                    })
                    .collect();
                self.set(i.a, &v);
            }
            Op::Math1F32 => {
                let x = self.get(i.b);
                let v: Vec<Value> = x
                    .into_iter()
                    .map(|x| match MathFn::from_u16(i.c) {
                        Some(MathFn::Sqrt) => self.b.ins().sqrt(x),
                        Some(MathFn::Abs) => self.b.ins().fabs(x),
                        Some(MathFn::Floor) => self.b.ins().floor(x),
                        Some(MathFn::Ceil) => self.b.ins().ceil(x),
                        _ => self.b.ins().trunc(x),
                    })
                    .collect();
                self.set(i.a, &v);
            }
            Op::DevGetF32 => self.load(pc, i, F32X4)?,
            Op::DevGetI32 | Op::DevGetU32 => self.load(pc, i, I32X4)?,
            Op::DevGetI64 | Op::DevGetU64 => self.load(pc, i, I64X2)?,
            Op::DevSetF32 | Op::DevSetI32 | Op::DevSetU32 | Op::DevSetI64 | Op::DevSetU64 => {
                self.store(pc, i)?
            }
            Op::BufLength => {
                let (_, len) = self.views[usize::from(i.b)]
                    .ok_or_else(|| self.err(pc, format!("r{} is not a buffer parameter", i.b)))?;
                let v = self.b.ins().splat(I64X2, len);
                let values = vec![v; 2 * self.chunks];
                self.set(i.a, &values);
            }
            op if per_lane(op).is_some() => {
                let v = self.per_lane(pc, i)?;
                self.set(i.a, &v);
            }
            op => {
                let lane_op = lane_op(op).ok_or_else(|| {
                    self.err(pc, format!("`{}` is not lowered to SIMD", op.mnemonic()))
                })?;
                match self.affine_compare(pc, lane_op, i) {
                    Some((v, run)) => {
                        self.set(i.a, &v);
                        if let Some(vars) = self.ranges[usize::from(i.a)] {
                            for (var, x) in vars.iter().zip(run) {
                                self.b.def_var(*var, x);
                            }
                        }
                    }
                    None => {
                        let v = self.lane_op(lane_op, i);
                        self.set(i.a, &v);
                    }
                }
            }
        }
        Ok(false)
    }

    /// Lane 0's value of instruction `i`, whose value is `fact` (uniform or affine), computed
    /// from its operands' bases with scalar instructions; `None` where the vector lowering
    /// must compute it.
    fn scalar(&mut self, pc: u32, i: Instr, fact: Fact) -> Result<Option<Value>, JitError> {
        let class = self.class(i.a);
        if class == Class::Handle {
            return Ok(None);
        }
        let ty = scalar_type(class);
        let b_base = |t: &mut Self| t.base(i.b).map(|(_, v)| v);
        Ok(Some(match i.op {
            Op::Mov if self.class(i.b) == class || class.is_word() => match b_base(self) {
                Some(x) => x,
                None => return Ok(None),
            },
            Op::LoadI if class != Class::Float => self.b.ins().iconst(ty, i64::from(i.bc() as i32)),
            Op::LoadK => {
                let x = self.constant_cell(pc, i)?;
                self.cell_scalar(class, x)
            }
            Op::BufLength => match self.views[usize::from(i.b)] {
                Some((_, len)) => len,
                None => return Ok(None),
            },
            // The first lane's coordinates and global ids.
            Op::Geom if i.b <= 2 => self.b.use_var(self.first[usize::from(i.b)]),
            Op::Geom if matches!(i.b, 9..=11) => {
                let axis = usize::from(i.b % 3);
                let x = self.b.use_var(self.first[axis]);
                let offset = self.b.use_var(self.group_offset[axis]);
                self.b.ins().iadd(offset, x)
            }
            Op::Geom if matches!(i.b, 3..=5) => self.b.use_var(self.group[usize::from(i.b % 3)]),
            // Launch values.
            Op::Geom if matches!(i.b, 6..=8 | 12..=15) => {
                let axis = 8 * i32::from(i.b % 3);
                let field = match i.b {
                    6..=8 => doff::BLOCK + axis,
                    12..=14 => doff::GRID + axis,
                    _ => doff::WAVE,
                };
                let v = self.b.ins().load(I64, MF, self.ctx, field);
                self.b.ins().ireduce(I32, v)
            }
            Op::AddImmI32 | Op::AddImmI64 => match b_base(self) {
                Some(x) => self.b.ins().iadd_imm_s(x, i64::from(i.c as i16)),
                None => return Ok(None),
            },
            Op::LNot => match b_base(self) {
                Some(x) => self.b.ins().bxor_imm_s(x, 1),
                None => return Ok(None),
            },
            Op::WrapI32 | Op::WrapU32 | Op::WrapI64 | Op::WrapU64 => {
                let Some(x) = b_base(self) else {
                    return Ok(None);
                };
                match (self.class(i.b), class) {
                    (Class::Long, Class::Long) => x,
                    (Class::Long, _) => self.b.ins().ireduce(I32, x),
                    (Class::Word { signed }, Class::Long) => {
                        if fact == Fact::Affine {
                            // Consecutive 32-bit lanes stay consecutive when widened only if
                            // none wrapped: the last lane's value must not be past the top.
                            let last = match signed {
                                true => i64::from(i32::MAX),
                                false => i64::from(u32::MAX),
                            } - (self.width() as i64 - 1);
                            let last = i64::from(last as i32);
                            let cc = match signed {
                                true => IntCC::SignedGreaterThan,
                                false => IntCC::UnsignedGreaterThan,
                            };
                            let wraps = self.b.ins().icmp_imm_s(cc, x, last);
                            self.bail_if(pc, wraps);
                        }
                        match signed {
                            true => self.b.ins().sextend(I64, x),
                            false => self.b.ins().uextend(I64, x),
                        }
                    }
                    _ => x,
                }
            }
            op => {
                let Some(lane_op) = lane_op(op) else {
                    return Ok(None);
                };
                let (Some((_, x)), Some((_, y))) = (self.base(i.b), self.base(i.c)) else {
                    if let LaneOp::Unary(u, lanes) = lane_op {
                        if let Some(x) = b_base(self) {
                            return Ok(Some(unary_op(&mut self.b, u, lanes, x)));
                        }
                    }
                    return Ok(None);
                };
                match lane_op {
                    LaneOp::Arith(a, lanes) => arith_op(&mut self.b, a, lanes, x, y),
                    LaneOp::Cmp(cmp, _) => {
                        let c = match cmp {
                            Cmp::Int(cc) => self.b.ins().icmp(cc, x, y),
                            Cmp::Float(cc) => self.b.ins().fcmp(cc, x, y),
                        };
                        self.b.ins().uextend(I32, c)
                    }
                    LaneOp::Unary(u, lanes) => unary_op(&mut self.b, u, lanes, x),
                }
            }
        }))
    }

    /// An integer `<` or `<=` between an affine and a uniform operand (a loop's `i < n`):
    /// the lanes where it holds are a prefix (affine on the left) or a suffix of the group,
    /// counted with scalar arithmetic. `None` for any other comparison. Lanes that would wrap
    /// (an affine value within the width of the top of its range) bail out.
    fn affine_compare(
        &mut self,
        pc: u32,
        op: LaneOp,
        i: Instr,
    ) -> Option<(Vec<Value>, [Value; 2])> {
        if !counts_lanes(self.plan, &self.facts, pc as usize, i) {
            return None;
        }
        let LaneOp::Cmp(Cmp::Int(cc), lanes) = op else {
            return None;
        };
        let (signed, or_equal) = match cc {
            IntCC::SignedLessThan => (true, false),
            IntCC::SignedLessThanOrEqual => (true, true),
            IntCC::UnsignedLessThan => (false, false),
            IntCC::UnsignedLessThanOrEqual => (false, true),
            _ => return None,
        };
        let ((fx, x), (fy, y)) = (self.base(i.b)?, self.base(i.c)?);
        let (start, bound, prefix) = match (fx, fy) {
            (Fact::Affine, Fact::Uniform) => (x, y, true),
            (Fact::Uniform, Fact::Affine) => (y, x, false),
            _ => return None,
        };
        // Lanes `start + j`: `start + j < bound` holds for the first `count(<)` lanes, and
        // `bound < start + j` fails for the first `count(<=)`.
        let counted_le = or_equal == prefix;
        let ty = if lanes == Lanes::Long { I64 } else { I32 };
        let w = self.width() as i64;
        let top = match (ty == I64, signed) {
            (true, true) => i64::MAX,
            (true, false) => -1,
            (false, true) => i64::from(i32::MAX),
            (false, false) => i64::from(u32::MAX),
        };
        let (gt, lt, le) = match signed {
            true => (
                IntCC::SignedGreaterThan,
                IntCC::SignedLessThan,
                IntCC::SignedLessThanOrEqual,
            ),
            false => (
                IntCC::UnsignedGreaterThan,
                IntCC::UnsignedLessThan,
                IntCC::UnsignedLessThanOrEqual,
            ),
        };
        let b = &mut self.b;
        let last = top.wrapping_sub(w - 1);
        let last = if ty == I32 {
            i64::from(last as i32)
        } else {
            last
        };
        let wraps = b.ins().icmp_imm_s(gt, start, last);
        // The difference `bound − start` where it is positive (exact as an unsigned value).
        let diff = b.ins().isub(bound, start);
        let (positive, cap) = match counted_le {
            true => (b.ins().icmp(le, start, bound), w - 1),
            false => (b.ins().icmp(lt, start, bound), w),
        };
        let cap = b.ins().iconst(ty, cap);
        let capped = b.ins().umin(diff, cap);
        let capped = match counted_le {
            true => b.ins().iadd_imm_s(capped, 1),
            false => capped,
        };
        let zero = b.ins().iconst(ty, 0);
        let count = b.ins().select(positive, capped, zero);
        let count = match ty == I64 {
            true => b.ins().ireduce(I32, count),
            false => count,
        };
        self.bail_if(pc, wraps);
        let run = match prefix {
            true => [self.b.ins().iconst(I32, 0), count],
            false => [count, self.b.ins().iconst(I32, w)],
        };
        let lanes = self.run_lanes(run[0], run[1]);
        Some((lanes, run))
    }

    /// The booleans of lanes `lo ≤ j < hi` (32-bit scalars between 0 and `W`): one signed
    /// compare per bound and vector.
    fn run_lanes(&mut self, lo: Value, hi: Value) -> Vec<Value> {
        let (lo, hi) = (self.b.ins().splat(I32X4, lo), self.b.ins().splat(I32X4, hi));
        (0..self.chunks)
            .map(|c| {
                let from = (c * WORDS) as i32;
                let (iota, next) = (
                    word_iota(&mut self.b, from),
                    word_iota(&mut self.b, from + 1),
                );
                let above = self.b.ins().icmp(IntCC::SignedGreaterThan, next, lo);
                let below = self.b.ins().icmp(IntCC::SignedGreaterThan, hi, iota);
                let inside = self.b.ins().band(above, below);
                self.b.ins().ushr_imm_s(inside, 31)
            })
            .collect()
    }

    /// Whether register `r` holds a counted comparison before `pc`.
    fn is_counted(&self, pc: u32, r: u16) -> bool {
        self.counted
            .get(pc as usize)
            .and_then(|at| at.get(usize::from(r)))
            .copied()
            .unwrap_or(false)
    }

    /// Where a jump from the current instruction to `pc` goes.
    fn block(&self, pc: u32) -> Result<Block, JitError> {
        if let Some(t) = self.turns.as_ref().filter(|t| t.header() == pc) {
            return Ok(t.arrival(Some(self.pc)));
        }
        self.blocks
            .get(pc as usize)
            .copied()
            .flatten()
            .ok_or_else(|| self.err(pc, "jump to a non-leader".into()))
    }

    /// `r[a] := op(r[b], k)` lane by lane, `k` in every lane at `r[a]`'s width.
    fn with_constant(
        &mut self,
        i: Instr,
        k: i64,
        op: impl Fn(&mut FunctionBuilder<'b>, Value, Value) -> Value,
    ) {
        let k = self.constant(self.class(i.a), k);
        let x = self.get(i.b);
        let v: Vec<Value> = x
            .iter()
            .zip(&k)
            .map(|(&x, &k)| op(&mut self.b, x, k))
            .collect();
        self.set(i.a, &v);
    }

    /// The vectors of a register of `class` holding `v` in every lane.
    fn constant(&mut self, class: Class, v: i64) -> Vec<Value> {
        match class {
            Class::Long => {
                let x = self.b.ins().iconst(I64, v);
                vec![self.b.ins().splat(I64X2, x); 2 * self.chunks]
            }
            _ => {
                let x = self.b.ins().iconst(I32, v);
                vec![self.b.ins().splat(I32X4, x); self.chunks]
            }
        }
    }

    /// An operation of [`per_lane`]: divisions first check every lane (a zero divisor, and
    /// `MIN / -1` for a signed quotient, bail out so that the item function raises the
    /// error of the first such lane); then each lane is computed on its own.
    fn per_lane(&mut self, pc: u32, i: Instr) -> Result<Vec<Value>, JitError> {
        let Some((bits, op)) = per_lane(i.op) else {
            return Err(self.err(pc, "not a per-lane operation".into()));
        };
        let (vty, lty, lanes_per) = if bits == 32 {
            (I32X4, I32, WORDS)
        } else {
            (I64X2, I64, 2)
        };
        let (x, y) = (self.get(i.b), self.get(i.c));
        if let PerLane::Div { signed } | PerLane::Rem { signed } = op {
            let zero = self.b.ins().iconst(lty, 0);
            let zero = self.b.ins().splat(vty, zero);
            let min = self.b.ins().iconst(
                lty,
                if bits == 32 {
                    i64::from(i32::MIN)
                } else {
                    i64::MIN
                },
            );
            let min = self.b.ins().splat(vty, min);
            let minus1 = self.b.ins().iconst(lty, -1);
            let minus1 = self.b.ins().splat(vty, minus1);
            let bad: Vec<Value> = x
                .iter()
                .zip(&y)
                .map(|(&x, &y)| {
                    let b = self.b.ins().icmp(IntCC::Equal, y, zero);
                    if !(signed && matches!(op, PerLane::Div { .. })) {
                        return b;
                    }
                    let xm = self.b.ins().icmp(IntCC::Equal, x, min);
                    let ym = self.b.ins().icmp(IntCC::Equal, y, minus1);
                    let ovf = self.b.ins().band(xm, ym);
                    self.b.ins().bor(b, ovf)
                })
                .collect();
            let any = self.any_lane(&bad);
            self.bail_if(pc, any);
        }
        // The amount of a shift may be of either width: its lane, reduced modulo the width.
        let amount_long = self.class(i.c) == Class::Long;
        let mut out = Vec::with_capacity(x.len());
        for (k, &xv) in x.iter().enumerate() {
            let mut lanes = Vec::with_capacity(lanes_per);
            for l in 0..lanes_per {
                let j = k * lanes_per + l;
                let a = self.b.ins().extractlane(xv, l as u8);
                let r = match op {
                    PerLane::Div { signed } | PerLane::Rem { signed } => {
                        let d = self.b.ins().extractlane(y[k], l as u8);
                        self.divide(op, signed, a, d)
                    }
                    _ => {
                        let m = if amount_long {
                            self.b.ins().extractlane(y[j / 2], (j % 2) as u8)
                        } else {
                            self.b.ins().extractlane(y[j / WORDS], (j % WORDS) as u8)
                        };
                        let m = match (amount_long, bits) {
                            (true, 32) => self.b.ins().ireduce(I32, m),
                            (false, 64) => self.b.ins().uextend(I64, m),
                            _ => m,
                        };
                        let m = self.b.ins().band_imm_s(m, i64::from(bits - 1));
                        match op {
                            PerLane::Shl => self.b.ins().ishl(a, m),
                            PerLane::Sshr => self.b.ins().sshr(a, m),
                            _ => self.b.ins().ushr(a, m),
                        }
                    }
                };
                lanes.push(r);
            }
            out.push(build_vector(&mut self.b, vty, &lanes));
        }
        Ok(out)
    }

    /// One lane's quotient or remainder (zero divisors and `MIN / -1` were excluded); a
    /// divisor of −1 never reaches the hardware divide, which would fault on `MIN % -1`.
    fn divide(&mut self, op: PerLane, signed: bool, x: Value, y: Value) -> Value {
        let b = &mut self.b;
        if !signed {
            return match op {
                PerLane::Div { .. } => b.ins().udiv(x, y),
                _ => b.ins().urem(x, y),
            };
        }
        let ty = b.func.dfg.value_type(x);
        let is_m1 = b.ins().icmp_imm_s(IntCC::Equal, y, -1);
        let one = b.ins().iconst(ty, 1);
        let safe = b.ins().select(is_m1, one, y);
        match op {
            PerLane::Div { .. } => {
                let q = b.ins().sdiv(x, safe);
                let neg = b.ins().ineg(x);
                b.ins().select(is_m1, neg, q)
            }
            _ => {
                let r = b.ins().srem(x, safe);
                let zero = b.ins().iconst(ty, 0);
                b.ins().select(is_m1, zero, r)
            }
        }
    }

    fn lane_op(&mut self, op: LaneOp, i: Instr) -> Vec<Value> {
        match op {
            LaneOp::Arith(a, lanes) => {
                let (x, y) = (self.get(i.b), self.get(i.c));
                x.iter()
                    .zip(&y)
                    .map(|(&x, &y)| arith_op(&mut self.b, a, lanes, x, y))
                    .collect()
            }
            LaneOp::Unary(u, lanes) => {
                let x = self.get(i.b);
                x.into_iter()
                    .map(|x| unary_op(&mut self.b, u, lanes, x))
                    .collect()
            }
            LaneOp::Cmp(cmp, lanes) => {
                let (x, y) = (self.get(i.b), self.get(i.c));
                let masks: Vec<Value> = x
                    .iter()
                    .zip(&y)
                    .map(|(&x, &y)| match cmp {
                        Cmp::Int(cc) => self.b.ins().icmp(cc, x, y),
                        Cmp::Float(cc) => self.b.ins().fcmp(cc, x, y),
                    })
                    .collect();
                // All-ones or zero per lane: 64-bit masks narrowed to 32-bit lanes, then the
                // boolean 1 or 0.
                let masks = if lanes == Lanes::Long {
                    self.narrow(&masks)
                } else {
                    masks
                };
                masks
                    .into_iter()
                    .map(|m| self.b.ins().ushr_imm_s(m, 31))
                    .collect()
            }
        }
    }

    /// 64-bit lanes (pairs of `i64x2`) truncated to 32-bit lanes (`i32x4`).
    fn narrow(&mut self, x: &[Value]) -> Vec<Value> {
        let le = MemFlagsData::new().with_endianness(Endianness::Little);
        let mask: Vec<u8> = [0u8, 8, 16, 24].iter().flat_map(|&s| s..s + 4).collect();
        let mask = self.b.func.dfg.immediates.push(ConstantData::from(mask));
        x.chunks(2)
            .map(|pair| {
                let lo = self.b.ins().bitcast(I8X16, le, pair[0]);
                let hi = self.b.ins().bitcast(I8X16, le, pair[1]);
                let bytes = self.b.ins().shuffle(lo, hi, mask);
                self.b.ins().bitcast(I32X4, le, bytes)
            })
            .collect()
    }

    /// 32-bit lanes widened to 64-bit lanes (sign- or zero-extended).
    fn widen(&mut self, x: &[Value], signed: bool) -> Vec<Value> {
        let mut out = Vec::with_capacity(2 * x.len());
        for &v in x {
            let b = &mut self.b;
            let (lo, hi) = if signed {
                (b.ins().swiden_low(v), b.ins().swiden_high(v))
            } else {
                (b.ins().uwiden_low(v), b.ins().uwiden_high(v))
            };
            out.push(lo);
            out.push(hi);
        }
        out
    }

    /// `geom`: coordinates as lanes, launch values the same in every lane (XPU §3: 32-bit,
    /// global ids wrapping).
    fn geom(&mut self, sel: u16) -> Result<Vec<Value>, JitError> {
        let axis = usize::from(sel % 3);
        let field = |base: i32| base + 8 * axis as i32;
        let uniform = |t: &mut Self, offset: i32| {
            let v = t.b.ins().load(I64, MF, t.ctx, offset);
            let w = t.b.ins().ireduce(I32, v);
            vec![t.b.ins().splat(I32X4, w); t.chunks]
        };
        Ok(match sel {
            0..=2 => self.item[axis]
                .clone()
                .into_iter()
                .map(|v| self.b.use_var(v))
                .collect(),
            3..=5 => {
                let g = self.b.use_var(self.group[axis]);
                vec![self.b.ins().splat(I32X4, g); self.chunks]
            }
            6..=8 => uniform(self, field(doff::BLOCK)),
            9..=11 => {
                let offset = self.b.use_var(self.group_offset[axis]);
                let g = self.b.ins().splat(I32X4, offset);
                self.item[axis]
                    .clone()
                    .into_iter()
                    .map(|v| {
                        let x = self.b.use_var(v);
                        self.b.ins().iadd(g, x)
                    })
                    .collect()
            }
            12..=14 => uniform(self, field(doff::GRID)),
            15 => uniform(self, doff::WAVE),
            _ => return Err(self.err(0, format!("geometry selector {sel} in SIMD code"))),
        })
    }

    /// An access at `pc` of every lane's element `r[index]` (of `size` bytes) of the memory
    /// in handle register `handle`: when the lanes' indices are consecutive, `vector` gets
    /// the first lane's element address (one bounds check for the group); when they are all
    /// the same, `uniform` (if given) gets that element's address; otherwise `lanes` gets
    /// each lane's (every lane checked). A lane outside the buffer bails out before any lane
    /// accesses memory. Returns the values the chosen closure gives, of types `results`.
    fn access(
        &mut self,
        pc: u32,
        (handle, index, size): (u16, u16, i64),
        results: &[ClType],
        vector: impl FnOnce(&mut Self, Value) -> Vec<Value>,
        uniform: Option<impl FnOnce(&mut Self, Value) -> Vec<Value>>,
        lanes: impl FnOnce(&mut Self, &[Value]) -> Vec<Value>,
    ) -> Result<Vec<Value>, JitError> {
        let (base, len) = self.views[usize::from(handle)]
            .ok_or_else(|| self.err(pc, format!("r{handle} is not a buffer parameter")))?;
        let limit = match self.run_limits[usize::from(handle)] {
            Some(slot) => self.b.ins().stack_load(I64, I64, slot, 0),
            None => len,
        };
        match self.base(index) {
            // One element for every lane.
            Some((Fact::Uniform, first)) if uniform.is_some() => {
                let at = self.checked_element(pc, (base, len), first, size);
                return Ok(uniform.map_or_else(Vec::new, |u| u(self, at)));
            }
            // Consecutive elements: the run limit checks all `W` of them.
            Some((Fact::Affine, first)) => {
                let at = self.checked_element(pc, (base, limit), first, size);
                return Ok(vector(self, at));
            }
            _ => {}
        }
        let idx = self.get(index);
        let (all, first) = self.consecutive(&idx);
        let (one, each, join) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        for &ty in results {
            self.b.append_block_param(join, ty);
        }
        self.b.ins().brif(all, one, &[], each, &[]);

        self.b.switch_to_block(one);
        let at = self.checked_element(pc, (base, limit), first, size);
        let out: Vec<BlockArg> = vector(self, at).into_iter().map(Into::into).collect();
        self.b.ins().jump(join, &out);

        self.b.switch_to_block(each);
        if let Some(uniform) = uniform {
            // Every lane at the same element (a row index shared by a group, say): one load.
            let base_v = self.b.ins().splat(I64X2, first);
            let same: Vec<Value> = idx
                .iter()
                .map(|&x| self.b.ins().icmp(IntCC::Equal, x, base_v))
                .collect();
            let all_same = self.every_lane(&same);
            let (one_elem, differ) = (self.b.create_block(), self.b.create_block());
            self.b.ins().brif(all_same, one_elem, &[], differ, &[]);
            self.b.switch_to_block(one_elem);
            let at = self.checked_element(pc, (base, len), first, size);
            let out: Vec<BlockArg> = uniform(self, at).into_iter().map(Into::into).collect();
            self.b.ins().jump(join, &out);
            self.b.switch_to_block(differ);
        }
        if self.checks {
            let n = self.b.ins().splat(I64X2, len);
            let outside: Vec<Value> = idx
                .iter()
                .map(|&x| self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, x, n))
                .collect();
            let any = self.any_lane(&outside);
            self.bail_if(pc, any);
        }
        let ats: Vec<Value> = (0..self.width())
            .map(|j| {
                let i = self.b.ins().extractlane(idx[j / 2], (j % 2) as u8);
                self.element_addr(base, i, size)
            })
            .collect();
        let out: Vec<BlockArg> = lanes(self, &ats).into_iter().map(Into::into).collect();
        self.b.ins().jump(join, &out);

        self.b.switch_to_block(join);
        Ok(self.b.block_params(join).to_vec())
    }

    /// Bails out at `pc` when `bad` is nonzero.
    fn bail_if(&mut self, pc: u32, bad: Value) {
        let bail = self.bail(pc, None);
        let good = self.b.create_block();
        self.b.ins().brif(bad, bail, &[], good, &[]);
        self.b.switch_to_block(good);
    }

    /// Whether every lane of every mask vector of `masks` is set (`i8`).
    fn every_lane(&mut self, masks: &[Value]) -> Value {
        let Some((&first, rest)) = masks.split_first() else {
            return self.b.ins().iconst(types::I8, 1);
        };
        let all = rest.iter().fold(first, |acc, &m| self.b.ins().band(acc, m));
        self.b.ins().vall_true(all)
    }

    /// Whether any lane of any mask vector of `masks` is set (`i8`).
    fn any_lane(&mut self, masks: &[Value]) -> Value {
        let Some((&first, rest)) = masks.split_first() else {
            return self.b.ins().iconst(types::I8, 0);
        };
        let any = rest.iter().fold(first, |acc, &m| self.b.ins().bor(acc, m));
        self.b.ins().vany_true(any)
    }

    /// Whether the 64-bit index vectors `idx` hold `i₀, i₀ + 1, …`, and `i₀`.
    fn consecutive(&mut self, idx: &[Value]) -> (Value, Value) {
        let first = self.b.ins().extractlane(idx[0], 0);
        let base = self.b.ins().splat(I64X2, first);
        let same: Vec<Value> = idx
            .iter()
            .enumerate()
            .map(|(k, &x)| {
                let iota = long_iota(&mut self.b, 2 * k as i64);
                let want = self.b.ins().iadd(base, iota);
                self.b.ins().icmp(IntCC::Equal, x, want)
            })
            .collect();
        (self.every_lane(&same), first)
    }

    /// An element load for every lane, into vectors of `ty`.
    fn load(&mut self, pc: u32, i: Instr, ty: ClType) -> Result<(), JitError> {
        let per = ty.lane_count() as usize;
        let vectors = self.width() / per;
        let results = vec![ty; vectors];
        let v = self.access(
            pc,
            (i.b, i.c, i64::from(ty.lane_bits() / 8)),
            &results,
            |t, at| {
                (0..vectors)
                    .map(|c| t.b.ins().load(ty, vector_flags(), at, (16 * c) as i32))
                    .collect()
            },
            Some(|t: &mut Self, at| {
                let x = t.b.ins().load(ty.lane_type(), MF, at, 0);
                vec![t.b.ins().splat(ty, x); vectors]
            }),
            |t, ats| {
                let lane_ty = ty.lane_type();
                let lanes: Vec<Value> = ats
                    .iter()
                    .map(|&at| t.b.ins().load(lane_ty, MF, at, 0))
                    .collect();
                lanes
                    .chunks(per)
                    .map(|l| build_vector(&mut t.b, ty, l))
                    .collect()
            },
        )?;
        self.set(i.a, &v);
        Ok(())
    }

    /// An element store for every lane; lane by lane in lane order when the indices are not
    /// consecutive (the last lane's value wins, as in item order).
    fn store(&mut self, pc: u32, i: Instr) -> Result<(), JitError> {
        let v = self.get(i.c);
        let per = self.width() / v.len();
        let size = 16 / per as i64;
        let stored = v.clone();
        self.access(
            pc,
            (i.a, i.b, size),
            &[],
            |t, at| {
                for (c, &x) in v.iter().enumerate() {
                    t.b.ins().store(vector_flags(), x, at, (16 * c) as i32);
                }
                Vec::new()
            },
            None::<fn(&mut Self, Value) -> Vec<Value>>,
            |t, ats| {
                for (j, &at) in ats.iter().enumerate() {
                    let x = t.b.ins().extractlane(stored[j / per], (j % per) as u8);
                    t.b.ins().store(MF, x, at, 0);
                }
                Vec::new()
            },
        )?;
        Ok(())
    }

    /// The address of element `index` of the memory at `base` with `len` elements, after
    /// checking it (a bail-out at `pc` when it is outside). With a run limit (see
    /// `run_limits`) for `len`, the check covers the group's elements `index … index + W − 1`
    /// (unsigned: a negative index is a huge one, and `index + W − 1` cannot wrap below the
    /// limit).
    fn checked_element(
        &mut self,
        pc: u32,
        (base, len): (Value, Value),
        index: Value,
        size: i64,
    ) -> Value {
        if self.checks {
            let past = self
                .b
                .ins()
                .icmp(IntCC::UnsignedGreaterThanOrEqual, index, len);
            self.bail_if(pc, past);
        }
        self.element_addr(base, index, size)
    }

    fn element_addr(&mut self, base: Value, index: Value, size: i64) -> Value {
        let offset = self.b.ins().imul_imm_s(index, size);
        self.b.ins().iadd(base, offset)
    }

    /// `jmpif`/`jmpifnot`: one branch when every lane agrees, else a bail-out in which each
    /// lane continues where its own condition leads.
    fn branch(&mut self, pc: u32, i: Instr) -> Result<(), JitError> {
        if let Some((Fact::Uniform, c)) = self.base(i.a) {
            // Every lane agrees: lane 0 decides.
            let (on_true, on_false) =
                super::lockstep::arms(pc, i, self.block(i.bc())?, self.block(pc + 1)?);
            self.b.ins().brif(c, on_true.0, &[], on_false.0, &[]);
            return Ok(());
        }
        let run = self.ranges[usize::from(i.a)].filter(|_| self.is_counted(pc, i.a));
        let (conds, all, any) = match run {
            // The lanes `lo ≤ j < hi` where a comparison holds: all of them or none of them?
            // (Their booleans, for lanes that disagree, from the run too: only the cold
            // bail-out reads them.)
            Some([lo, hi]) => {
                let (lo, hi) = (self.b.use_var(lo), self.b.use_var(hi));
                let span = self.b.ins().isub(hi, lo);
                let w = self.width() as i64;
                let all = self.b.ins().icmp_imm_s(IntCC::Equal, span, w);
                let any = self.b.ins().icmp(IntCC::SignedGreaterThan, hi, lo);
                (self.get(i.a), all, any)
            }
            // (Booleans are 0 or 1 in every lane: their `and` and `or` are lane-wise.)
            None => {
                let conds = self.get(i.a);
                let (all, any) = (self.every_lane(&conds), self.any_lane(&conds));
                (conds, all, any)
            }
        };
        let (on_true, on_false) =
            super::lockstep::arms(pc, i, self.block(i.bc())?, self.block(pc + 1)?);
        let mixed = self.b.create_block();
        let branch = (conds, i64::from(on_true.1) + 1, i64::from(on_false.1) + 1);
        let bail = self.bail(pc, Some(branch));
        self.b.ins().brif(all, on_true.0, &[], mixed, &[]);
        self.b.switch_to_block(mixed);
        self.b.ins().brif(any, bail, &[], on_false.0, &[]);
        Ok(())
    }

    /// A cold bail-out block for `pc`, filled by [`Simd::epilogue`].
    fn bail(&mut self, pc: u32, branch: Option<(Vec<Value>, i64, i64)>) -> Block {
        let block = self.b.create_block();
        self.b.set_cold_block(block);
        self.bails.push(Bail { block, pc, branch });
        block
    }

    /// Fills the bail-out blocks: each lane's live registers (as cells) and continuation to
    /// its file at `ctx.regs`, the group to `ctx.lin`, the pc to `ctx.stop_pc`, `STOP_BAIL`.
    fn epilogue(&mut self) {
        let bails = std::mem::take(&mut self.bails);
        for bail in bails {
            self.b.switch_to_block(bail.block);
            // (The registers as they were before the instruction at `bail.pc`.)
            self.pc = bail.pc;
            self.store_lanes(bail.pc, Some(bail.branch.as_ref()));
            // (A turn function's group: its slot, from which the embedder knows the rest; a
            // lockstep function's: its workgroup and first item.)
            match &self.turns {
                Some(t) => {
                    let x = self.b.use_var(t.current());
                    self.b.ins().store(MF, x, self.ctx, doff::TURN);
                }
                None => {
                    let l0 = self.b.use_var(self.lin0);
                    self.b.ins().store(MF, l0, self.ctx, doff::LIN);
                    if self.resume.is_none() {
                        let left = self.b.use_var(self.left);
                        self.b.ins().store(MF, left, self.ctx, doff::WORKGROUPS);
                        for axis in 0..3 {
                            let g = self.b.use_var(self.group[axis]);
                            let g = self.b.ins().uextend(I64, g);
                            let at = doff::GROUP + 8 * axis as i32;
                            self.b.ins().store(MF, g, self.ctx, at);
                        }
                    }
                }
            }
            let pc = self.b.ins().iconst(I64, i64::from(bail.pc));
            self.b.ins().store(MF, pc, self.ctx, doff::STOP_PC);
            let stop = self.b.ins().iconst(I32, i64::from(STOP_BAIL));
            self.b.ins().return_(&[stop]);
        }
    }

    /// Stores each lane's registers live at `pc` (as cells) to its file at `ctx.regs`, and,
    /// for a bail (`bail`), where the lane continues: after a divergent branch where its
    /// condition leads, else at `pc`.
    fn store_lanes(&mut self, pc: u32, bail: Option<Option<&(Vec<Value>, i64, i64)>>) {
        let n = self.f.regs.len();
        let stride = 8 * (n as i32 + 1);
        let files = self.b.ins().load(I64, MF, self.ctx, doff::REGS);
        let live = self.live.get(pc as usize).cloned().unwrap_or_default();
        let regs: Vec<(u16, Held)> = (0..n as u16)
            .filter(|&r| live.contains(r))
            .map(|r| match self.base(r) {
                Some(base) => (r, Held::Base(base)),
                None => (r, Held::Vectors(self.get(r))),
            })
            .collect();
        for j in 0..self.width() {
            let file = stride * j as i32;
            for (r, held) in &regs {
                let cell = self.lane_cell(self.class(*r), held, j);
                self.b
                    .ins()
                    .store(MF, cell, files, file + 8 * i32::from(*r));
            }
            let cont = match bail {
                None => continue,
                Some(Some((conds, on_true, on_false))) => {
                    let c = self
                        .b
                        .ins()
                        .extractlane(conds[j / WORDS], (j % WORDS) as u8);
                    let t = self.b.ins().iconst(I64, *on_true);
                    let f = self.b.ins().iconst(I64, *on_false);
                    self.b.ins().select(c, t, f)
                }
                Some(None) => self.b.ins().iconst(I64, i64::from(pc) + 1),
            };
            self.b.ins().store(MF, cont, files, file + 8 * n as i32);
        }
    }

    /// Lane `j` of a register of `class` as the canonical cell.
    fn lane_cell(&mut self, class: Class, held: &Held, j: usize) -> Value {
        let b = &mut self.b;
        let values = match held {
            Held::Vectors(values) => values,
            Held::Base((fact, base)) => {
                let x = match fact {
                    Fact::Affine => b.ins().iadd_imm_s(*base, j as i64),
                    _ => *base,
                };
                return match class {
                    Class::Word { signed: true } => b.ins().sextend(I64, x),
                    Class::Word { signed: false } => b.ins().uextend(I64, x),
                    Class::Float => {
                        let w = b.ins().bitcast(I32, MemFlagsData::new(), x);
                        b.ins().uextend(I64, w)
                    }
                    Class::Long | Class::Handle => x,
                };
            }
        };
        match class {
            Class::Handle => values[0],
            Class::Long => b.ins().extractlane(values[j / 2], (j % 2) as u8),
            Class::Word { signed } => {
                let w = b.ins().extractlane(values[j / WORDS], (j % WORDS) as u8);
                if signed {
                    b.ins().sextend(I64, w)
                } else {
                    b.ins().uextend(I64, w)
                }
            }
            Class::Float => {
                let x = b.ins().extractlane(values[j / WORDS], (j % WORDS) as u8);
                let w = b.ins().bitcast(I32, MemFlagsData::new(), x);
                b.ins().uextend(I64, w)
            }
        }
    }
}

/// Vector loads and stores: never trapping (the lanes' indices were checked), but only
/// element-aligned.
fn vector_flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

/// `(from, from + 1, from + 2, from + 3)` as 32-bit lanes.
fn word_iota(b: &mut FunctionBuilder<'_>, from: i32) -> Value {
    let bytes: Vec<u8> = (0..WORDS as i32)
        .flat_map(|k| (from + k).to_le_bytes())
        .collect();
    let c = b.func.dfg.constants.insert(ConstantData::from(bytes));
    b.ins().vconst(I32X4, c)
}

/// `(from, from + 1)` as 64-bit lanes.
fn long_iota(b: &mut FunctionBuilder<'_>, from: i64) -> Value {
    let bytes: Vec<u8> = (0..2).flat_map(|k| (from + k).to_le_bytes()).collect();
    let c = b.func.dfg.constants.insert(ConstantData::from(bytes));
    b.ins().vconst(I64X2, c)
}

/// A vector of `ty` from its lanes' scalars.
fn build_vector(b: &mut FunctionBuilder<'_>, ty: ClType, lanes: &[Value]) -> Value {
    let mut v = b.ins().splat(ty, lanes[0]);
    for (k, &x) in lanes.iter().enumerate().skip(1) {
        v = b.ins().insertlane(v, x, k as u8);
    }
    v
}

/// The scalar type of one lane of a register of `class` (a handle is an address).
fn scalar_type(class: Class) -> ClType {
    match class {
        Class::Word { .. } => I32,
        Class::Float => types::F32,
        Class::Long | Class::Handle => I64,
    }
}

/// A lane-wise binary operation, on vectors or on one lane's scalars alike.
fn arith_op(b: &mut FunctionBuilder<'_>, a: Arith, lanes: Lanes, x: Value, y: Value) -> Value {
    // (By a constant power of two: a multiplication, with the same result.)
    if let Arith::Div = a {
        return super::divide(b, x, y);
    }
    let b = b.ins();
    match (a, lanes) {
        (Arith::Add, Lanes::Float) => b.fadd(x, y),
        (Arith::Sub, Lanes::Float) => b.fsub(x, y),
        (Arith::Mul, Lanes::Float) => b.fmul(x, y),
        (Arith::Div, _) => b.fdiv(x, y),
        (Arith::Add, _) => b.iadd(x, y),
        (Arith::Sub, _) => b.isub(x, y),
        (Arith::Mul, _) => b.imul(x, y),
        (Arith::And, _) => b.band(x, y),
        (Arith::Or, _) => b.bor(x, y),
        (Arith::Xor, _) => b.bxor(x, y),
        (Arith::Min { signed: true }, _) => b.smin(x, y),
        (Arith::Min { signed: false }, _) => b.umin(x, y),
        (Arith::Max { signed: true }, _) => b.smax(x, y),
        (Arith::Max { signed: false }, _) => b.umax(x, y),
    }
}

/// A lane-wise unary operation, on vectors or on one lane's scalar alike.
fn unary_op(b: &mut FunctionBuilder<'_>, u: Unary, lanes: Lanes, x: Value) -> Value {
    let b = b.ins();
    match (u, lanes) {
        (Unary::Neg, Lanes::Float) => b.fneg(x),
        (Unary::Neg, _) => b.ineg(x),
        (Unary::Not, _) => b.bnot(x),
    }
}
