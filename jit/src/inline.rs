//! Inlining of leaf calls made in loops, on the bytecode, before translation.
//!
//! A call of a small function that calls nothing itself (a *leaf*: nbody's `advance`) from a
//! loop costs a prologue and an epilogue per call and, worse, the callee's lookups of every
//! array it touches, at every call: its loops hoist them, but only over its own code. Spliced
//! into the caller, the callee's code is part of the caller's loop, whose preheader then looks
//! each array up once for all its iterations ([`crate::loops`]).
//!
//! The splice replaces `call` at caller pc `p` by a *segment*: one `mov` per parameter into
//! the callee's registers (renumbered past the caller's: `base + r`), the callee's code with
//! its branch targets moved, and each `ret r` turned into a jump to a two-instruction stub
//! `mov a, base + r; jmp after` (`retvoid` jumps to `after` directly). The segment behaves
//! as the call did except for what the translator settles at the site:
//!
//! * errors: an error inside the segment must show the callee's frame on top of the caller's,
//!   as after a real call. The translator reports each pc through [`Inlined::origin`] and
//!   pushes both trace entries (`Tr::fault_block`); hooks that name a register in a message
//!   get the callee's own number;
//! * depth: the real call fails with `E-STACK` at the depth limit before its frame counts;
//!   the segment starts with the same check (`Tr::instr`).
//!
//! Callees are kept simple enough that nothing else differs: host code of at most
//! [`MAX_CALLEE`] instructions, no call, no ownership transfer (`retown`, `takeown`), no
//! String register (the prefix of a String-handling callee is not worth the window) and no
//! xpu host operation.

use cajeta_bytecode::{FnKind, Function, Instr, Module, Op, Operand, Type};

use crate::translate::{unsupported, xpu_host};

/// The most instructions a callee may have to be inlined.
const MAX_CALLEE: usize = 256;

/// The most instructions the caller may grow to.
const MAX_COMBINED: usize = 4096;

/// One inlined call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Site {
    /// The callee's function index.
    pub callee: u32,
    /// The call's pc in the original caller.
    pub call_pc: u32,
    /// The combined pc of the segment's first instruction (its first `mov`).
    pub start: u32,
    /// The combined pc of the callee's pc 0.
    pub body: u32,
    /// The combined pc of the first result stub (one past the callee's code).
    pub stubs: u32,
    /// One past the segment's last instruction.
    pub end: u32,
    /// The callee's register `r` is the combined function's register `base + r`.
    pub base: u16,
}

/// A caller with some of its calls inlined.
pub(crate) struct Inlined {
    /// The combined function (the caller's signature, name and source file).
    pub f: Function,
    /// The inlined calls, in pc order.
    pub sites: Vec<Site>,
}

impl Inlined {
    /// Where combined pc `pc` comes from: `(Some(k), callee pc)` inside the segment of site
    /// `k` (the argument moves count as the callee's pc 0, the result stubs as the callee's
    /// last), else `(None, caller pc)`.
    #[cfg(test)]
    pub fn origin(&self, pc: u32) -> (Option<usize>, u32) {
        origin(&self.sites, pc)
    }
}

/// [`Inlined::origin`] from the sites alone.
pub(crate) fn origin(sites: &[Site], pc: u32) -> (Option<usize>, u32) {
    let mut shift = 0;
    for (k, s) in sites.iter().enumerate() {
        if pc < s.start {
            break;
        }
        if pc < s.end {
            let inner = pc.saturating_sub(s.body).min(s.stubs - s.body - 1);
            return (Some(k), inner);
        }
        // The segment stands for the one `call` instruction.
        shift += s.end - s.start - 1;
    }
    (None, pc - shift)
}

/// The caller `f` (function `func` of `module`) with its calls of inlinable leaves made in
/// loops inlined, or `None` when it has none.
pub(crate) fn leaf_calls(module: &Module, func: u32, f: &Function) -> Option<Inlined> {
    let seg_len = segments(module, func, f)?;
    build(module, f, &seg_len)
}

/// The pcs of the calls [`leaf_calls`] splices into `f`.
pub(crate) fn spliced_calls(module: &Module, func: u32, f: &Function) -> Vec<u32> {
    segments(module, func, f).map_or_else(Vec::new, |seg_len| {
        (0..seg_len.len() as u32)
            .filter(|&p| seg_len[p as usize] > 1)
            .collect()
    })
}

/// The length of the code each caller pc becomes (1, or a splice's segment), or `None` when
/// nothing is spliced.
fn segments(module: &Module, func: u32, f: &Function) -> Option<Vec<usize>> {
    let in_loop = |p: usize| {
        f.code
            .iter()
            .enumerate()
            .any(|(e, i)| e >= p && i.op.is_branch() && (i.bc() as usize) <= p)
    };
    let callee_of = |p: usize| -> Option<&Function> {
        let i = f.code[p];
        if i.op != Op::Call || u32::from(i.c) == func || !in_loop(p) {
            return None;
        }
        let g = module.functions.get(usize::from(i.c))?;
        inlinable(g).then_some(g)
    };
    let mut seg_len = vec![1usize; f.code.len()];
    let mut grown = f.code.len();
    let mut any = false;
    for (p, len) in seg_len.iter_mut().enumerate() {
        if let Some(g) = callee_of(p) {
            let n = segment_len(g);
            if grown + n - 1 > MAX_COMBINED {
                continue;
            }
            grown += n - 1;
            *len = n;
            any = true;
        }
    }
    any.then_some(seg_len)
}

/// [`leaf_calls`] for the segment lengths [`segments`] chose.
fn build(module: &Module, f: &Function, seg_len: &[usize]) -> Option<Inlined> {
    // Combined pc of each caller pc (and of the end).
    let mut new_pc = Vec::with_capacity(f.code.len() + 1);
    let mut at = 0usize;
    for &n in seg_len {
        new_pc.push(at as u32);
        at += n;
    }
    new_pc.push(at as u32);
    let mut code = Vec::with_capacity(at);
    let mut regs = f.regs.clone();
    let mut sites = Vec::new();
    for (p, &ins) in f.code.iter().enumerate() {
        if seg_len[p] == 1 {
            let mut ins = ins;
            if ins.op.is_branch() {
                ins.set_bc(new_pc[ins.bc() as usize]);
            }
            code.push(ins);
            continue;
        }
        let g = &module.functions[usize::from(ins.c)];
        let base = u16::try_from(regs.len()).ok()?;
        if regs.len() + g.regs.len() > usize::from(u16::MAX) {
            return None;
        }
        regs.extend_from_slice(&g.regs);
        let start = code.len() as u32;
        for k in 0..g.params {
            code.push(Instr::new(Op::Mov, base + k, ins.b + k, 0));
        }
        let body = code.len() as u32;
        let after = new_pc[p + 1];
        let mut stub = body + g.code.len() as u32;
        let mut stubs = Vec::new();
        for &gi in &g.code {
            code.push(match gi.op {
                Op::RetVoid => Instr::with_bc(Op::Jmp, 0, after),
                Op::Ret => {
                    stubs.push(Instr::new(Op::Mov, ins.a, base + gi.a, 0));
                    stubs.push(Instr::with_bc(Op::Jmp, 0, after));
                    let j = Instr::with_bc(Op::Jmp, 0, stub);
                    stub += 2;
                    j
                }
                _ => renumbered(gi, base, body),
            });
        }
        let stubs_at = code.len() as u32;
        code.extend(stubs);
        sites.push(Site {
            callee: u32::from(ins.c),
            call_pc: p as u32,
            start,
            body,
            stubs: stubs_at,
            end: code.len() as u32,
            base,
        });
    }
    debug_assert_eq!(code.len(), at);
    let combined = Function {
        code,
        regs,
        ..f.clone()
    };
    Some(Inlined { f: combined, sites })
}

/// Whether calls of `g` may be inlined (see the module documentation).
fn inlinable(g: &Function) -> bool {
    g.kind == FnKind::Host
        && !g.code.is_empty()
        && g.code.len() <= MAX_CALLEE
        && !g.regs.contains(&Type::Str)
        && g.code.iter().all(|i| {
            !matches!(i.op, Op::Call | Op::RetOwn | Op::TakeOwn | Op::Launch)
                && !unsupported(i.op)
                && !xpu_host(i.op)
        })
}

/// Instructions of the segment that stands for a call of `g`.
fn segment_len(g: &Function) -> usize {
    let rets = g.code.iter().filter(|i| i.op == Op::Ret).count();
    usize::from(g.params) + g.code.len() + 2 * rets
}

/// Instruction `i` of a callee with its registers moved by `base` and its branch target by
/// `body`. Every register slot moves: `Dst` and `Src`, and `Special`, which names a register
/// (or the first of a range) in every opcode [`inlinable`] lets through.
fn renumbered(i: Instr, base: u16, body: u32) -> Instr {
    let ops = i.op.operands();
    let mut out = i;
    let moved = |o: Operand, r: u16| match o {
        Operand::Dst(_) | Operand::Src(_) | Operand::Special => r + base,
        _ => r,
    };
    out.a = moved(ops[0], i.a);
    if !matches!(
        ops[1],
        Operand::Imm32 | Operand::Const | Operand::Target | Operand::Class
    ) {
        out.b = moved(ops[1], i.b);
        out.c = moved(ops[2], i.c);
    }
    if i.op.is_branch() {
        out.set_bc(body + i.bc());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_function::function;

    /// `leaf(x) = x + x` (int64), and a caller that calls it in a loop:
    /// `for (;;) { r1 = leaf(r0) }` with r2 the loop test.
    fn module() -> Module {
        let leaf = function(
            FnKind::Host,
            (1, Some(Type::I64)),
            vec![Type::I64, Type::I64],
            vec![
                Instr::new(Op::AddI64, 1, 0, 0),
                Instr::new(Op::Ret, 1, 0, 0),
            ],
        );
        let caller = function(
            FnKind::Host,
            (1, None),
            vec![Type::I64, Type::I64, Type::BOOL, Type::I64],
            vec![
                Instr::new(Op::Mov, 3, 0, 0),     // 0
                Instr::new(Op::Call, 1, 3, 1),    // 1: r1 = leaf(r3)
                Instr::new(Op::LtI64, 2, 1, 0),   // 2
                Instr::with_bc(Op::JmpIf, 2, 1),  // 3
                Instr::new(Op::RetVoid, 0, 0, 0), // 4
            ],
        );
        Module {
            functions: vec![caller, leaf],
            ..Module::default()
        }
    }

    #[test]
    fn a_leaf_called_in_a_loop_is_spliced_in() {
        let m = module();
        let inl = leaf_calls(&m, 0, &m.functions[0]).expect("inlined");
        let base = 4;
        let want = vec![
            Instr::new(Op::Mov, 3, 0, 0),
            Instr::new(Op::Mov, base, 3, 0), // 1: argument
            Instr::new(Op::AddI64, base + 1, base, base), // 2: callee pc 0
            Instr::with_bc(Op::Jmp, 0, 4),   // 3: ret → stub
            Instr::new(Op::Mov, 1, base + 1, 0), // 4: stub
            Instr::with_bc(Op::Jmp, 0, 6),   // 5
            Instr::new(Op::LtI64, 2, 1, 0),  // 6
            Instr::with_bc(Op::JmpIf, 2, 1), // 7: back to the segment
            Instr::new(Op::RetVoid, 0, 0, 0),
        ];
        assert_eq!(inl.f.code, want);
        assert_eq!(inl.f.regs.len(), 6);
        assert_eq!(inl.f.regs[5], Type::I64);
        let site = Site {
            callee: 1,
            call_pc: 1,
            start: 1,
            body: 2,
            stubs: 4,
            end: 6,
            base,
        };
        assert_eq!(inl.sites, vec![site]);
        // Origins: caller pcs before and after (shifted back), the callee's inside.
        assert_eq!(inl.origin(0), (None, 0));
        assert_eq!(inl.origin(1), (Some(0), 0));
        assert_eq!(inl.origin(2), (Some(0), 0));
        assert_eq!(inl.origin(3), (Some(0), 1));
        assert_eq!(inl.origin(5), (Some(0), 1));
        assert_eq!(inl.origin(6), (None, 2));
        assert_eq!(inl.origin(8), (None, 4));
    }

    #[test]
    fn calls_outside_loops_and_non_leaves_stay_calls() {
        let mut m = module();
        // No backward branch: the call is not in a loop.
        m.functions[0].code[3] = Instr::new(Op::Nop, 0, 0, 0);
        assert!(leaf_calls(&m, 0, &m.functions[0]).is_none());
        // A callee that calls.
        let mut m = module();
        m.functions[1].code.insert(0, Instr::new(Op::Call, 1, 0, 0));
        assert!(leaf_calls(&m, 0, &m.functions[0]).is_none());
        // A callee with a String register.
        let mut m = module();
        m.functions[1].regs.push(Type::Str);
        assert!(leaf_calls(&m, 0, &m.functions[0]).is_none());
    }
}
