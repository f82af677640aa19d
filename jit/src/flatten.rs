//! `@Device` calls inlined into a kernel before it is compiled for the CPU backend: the kernel's
//! code with every `call` replaced by the callee's code, so the kernel translator sees one
//! function.
//!
//! Each inlined call gets its own block of registers appended after the kernel's (callee
//! register `r` becomes `base + r`); the call copies the arguments from its window into the
//! callee's parameters, a `ret` copies the result to the call's destination and jumps past the
//! inlined body. Every instruction of the flat function remembers where it came from — the
//! function and pc, then each enclosing call, innermost first — so a fault in inlined code is
//! reported with the device frames the interpreter would give, and with the callee's own
//! register number (`base` subtracted) for the variable name.
//!
//! An inlined callee's non-parameter registers are not re-zeroed at each call, as a fresh
//! interpreter frame's are: that differs only for a register read before it is written, which
//! the compiler never emits. Callees containing a rendezvous are not inlined (the kernel then
//! stays on the scheduler), so a rendezvous in the flat code is always the kernel's own, with
//! the kernel's registers at their own numbers.

use cajeta_bytecode::{FnKind, Function, Instr, Module, Op, Operand};

/// Where a flat instruction came from.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Origin {
    /// `(function, pc)` frames, innermost first: the instruction itself, then each call.
    pub frames: Vec<(u32, u32)>,
    /// The first flat register of the innermost function's registers.
    pub base: u16,
}

/// A kernel with its calls inlined.
pub(crate) struct Flat {
    /// The flat kernel (same name, kind and parameters).
    pub func: Function,
    /// One origin per flat instruction.
    pub origins: Vec<Origin>,
}

/// Most flat instructions (and registers) before inlining gives up.
const MAX_FLAT: usize = 1 << 15;

/// Inlines every call of kernel `kernel`.
///
/// # Errors
/// Why the kernel cannot be flattened: a callee with a rendezvous or that is not a device
/// function, recursion (excluded by the compiler and the plan), or a result too big.
pub(crate) fn flatten(
    m: &Module,
    kernel: u32,
    rendezvous: impl Fn(Op) -> bool,
) -> Result<Flat, String> {
    let k = m
        .functions
        .get(kernel as usize)
        .ok_or_else(|| "no such kernel".to_string())?;
    let mut out = Flat {
        func: Function {
            code: Vec::new(),
            regs: k.regs.clone(),
            lines: Vec::new(),
            regions: Vec::new(),
            ..k.clone()
        },
        origins: Vec::new(),
    };
    let mut stack = vec![kernel];
    emit(m, kernel, 0, &[], None, &mut out, &mut stack, &rendezvous)?;
    Ok(out)
}

/// Emits function `func` with its registers at `base` into `out`; `callers` are the enclosing
/// calls' frames; `ret` is where a `ret` of an inlined function goes: the result register
/// (flat) and the list collecting the jumps to patch to the continuation.
#[allow(clippy::too_many_arguments)]
fn emit(
    m: &Module,
    func: u32,
    base: u16,
    callers: &[(u32, u32)],
    ret: Option<(Option<u16>, &mut Vec<usize>)>,
    out: &mut Flat,
    stack: &mut Vec<u32>,
    rendezvous: &impl Fn(Op) -> bool,
) -> Result<(), String> {
    let f = &m.functions[func as usize];
    let mut ret = ret;
    // pc of `f` → flat pc, and the jumps to patch once every pc is placed.
    let mut at = vec![0usize; f.code.len()];
    let mut jumps: Vec<(usize, u32)> = Vec::new();
    let reg = |r: u16| -> Result<u16, String> {
        base.checked_add(r)
            .ok_or_else(|| "too many registers".to_string())
    };
    for (pc, &i) in f.code.iter().enumerate() {
        at[pc] = out.func.code.len();
        if out.func.code.len() > MAX_FLAT {
            return Err("the inlined kernel is too big".into());
        }
        let mut frames = vec![(func, pc as u32)];
        frames.extend_from_slice(callers);
        let origin = Origin { frames, base };
        let push = |out: &mut Flat, i: Instr, origin: &Origin| {
            out.func.code.push(i);
            out.origins.push(origin.clone());
        };
        match i.op {
            Op::Call => {
                let callee_index = u32::from(i.c);
                let callee = m
                    .functions
                    .get(callee_index as usize)
                    .ok_or_else(|| format!("call of missing function {callee_index}"))?;
                if callee.kind != FnKind::Device {
                    return Err(format!("`{}` is not a device function", callee.name));
                }
                if stack.contains(&callee_index) {
                    return Err(format!("`{}` is recursive", callee.name));
                }
                if callee.code.iter().any(|x| rendezvous(x.op)) {
                    return Err(format!("`{}` has a rendezvous", callee.name));
                }
                let callee_base = u16::try_from(out.func.regs.len())
                    .map_err(|_| "too many registers".to_string())?;
                out.func.regs.extend_from_slice(&callee.regs);
                if out.func.regs.len() > MAX_FLAT {
                    return Err("the inlined kernel is too big".into());
                }
                // Arguments: window r[b..b+params] → the callee's parameters.
                for p in 0..callee.params {
                    let from = reg(i.b.checked_add(p).ok_or("window overflow")?)?;
                    push(out, Instr::new(Op::Mov, callee_base + p, from, 0), &origin);
                }
                let dst = callee.ret.map(|_| reg(i.a)).transpose()?;
                let mut conts = Vec::new();
                let mut inner = vec![(func, pc as u32)];
                inner.extend_from_slice(callers);
                stack.push(callee_index);
                emit(
                    m,
                    callee_index,
                    callee_base,
                    &inner,
                    Some((dst, &mut conts)),
                    out,
                    stack,
                    rendezvous,
                )?;
                stack.pop();
                // The continuation: the next instruction of this function (V-TERM: a call is
                // never a function's last instruction, so there is one).
                let cont = out.func.code.len() as u32;
                for j in conts {
                    out.func.code[j].set_bc(cont);
                }
            }
            Op::Ret | Op::RetVoid => match ret.as_mut() {
                Some((dst, conts)) => {
                    if let (Op::Ret, Some(d)) = (i.op, *dst) {
                        push(out, Instr::new(Op::Mov, d, reg(i.a)?, 0), &origin);
                    }
                    conts.push(out.func.code.len());
                    push(out, Instr::with_bc(Op::Jmp, 0, 0), &origin);
                }
                None => push(out, i, &origin),
            },
            _ => {
                let mut x = i;
                let ops = i.op.operands();
                let is_reg =
                    |o: Operand| matches!(o, Operand::Dst(_) | Operand::Src(_) | Operand::Special);
                if is_reg(ops[0]) {
                    x.a = reg(i.a)?;
                }
                if matches!(ops[1], Operand::Target | Operand::Imm32 | Operand::Const) {
                    // `bc` spans b and c: not registers.
                } else {
                    if is_reg(ops[1]) {
                        x.b = reg(i.b)?;
                    }
                    if is_reg(ops[2]) {
                        x.c = reg(i.c)?;
                    }
                }
                if i.op.is_branch() {
                    jumps.push((out.func.code.len(), i.bc()));
                }
                push(out, x, &origin);
            }
        }
    }
    for (j, target) in jumps {
        let t = at
            .get(target as usize)
            .copied()
            .ok_or_else(|| format!("jump target {target} outside `{}`", f.name))?;
        out.func.code[j].set_bc(t as u32);
    }
    Ok(())
}
