//! The static facts about a kernel that the lane scheduler needs, computed once per launch by
//! one scan of the kernel and the device functions it reaches.
//!
//! * whether any rendezvous (a `barrier` or a wave collective, XPU §5.2) is reachable: without
//!   one, a workgroup's items run one after another to completion with one register file (no
//!   switching);
//! * the register stack an item needs at most (`need(f) = max(regs(f), max over calls
//!   (b + need(callee)))`) and the deepest call chain, so an item's stack is allocated once and
//!   calls never grow it;
//! * the kernel's static shared bytes.
//!
//! The scan also refuses what the verifier does not exclude but device code must not contain:
//! recursion (the compiler rejects it, XPU §3.3) and host-only opcodes or calls to non-device
//! functions (V-SIDE and V-CALL exclude them; checked again because it costs nothing here).

use cajeta_bytecode::{FnKind, Module, Op};

use super::wave::WaveOp;

/// The most register cells one item may need (8 MiB); larger kernels are refused.
pub(crate) const MAX_STACK_CELLS: usize = 1 << 20;

/// What the scheduler needs to know about a kernel.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// A `barrier` or a wave collective is reachable from the kernel: its items need their own
    /// registers and the switching scheduler.
    pub has_rendezvous: bool,
    /// Register cells an item's stack needs at most.
    pub stack_cells: usize,
    /// The deepest call chain, in frames (the kernel's counts 1).
    pub max_depth: usize,
    /// Bytes of the kernel's shared declarations.
    pub shared_bytes: u64,
}

/// True for the opcodes the device interpreter runs: all but the host-only operations and
/// object field access (device code has no objects: POD parameters arrive as their fields).
pub(crate) fn device_op(op: Op) -> bool {
    !op.is_host_only() && !matches!(op, Op::GetField | Op::SetField)
}

/// Scans kernel `kernel` of `m` and the device functions it calls.
///
/// # Errors
/// The reason the kernel cannot run on this backend, for an `XPU-E-LAUNCH` message.
pub(crate) fn plan(m: &Module, kernel: u32) -> Result<Plan, String> {
    let n = m.functions.len();
    let Some(k) = m.functions.get(kernel as usize) else {
        return Err(format!("function {kernel} does not exist"));
    };
    if k.kind != FnKind::Kernel {
        return Err(format!("`{}` is not a kernel", k.name));
    }
    // Iterative depth-first search: state 0 unseen, 1 on the path, 2 done.
    let mut state = vec![0u8; n];
    let mut need = vec![0usize; n];
    let mut depth = vec![0usize; n];
    let mut has_rendezvous = false;
    // (function, next pc to scan)
    let mut path: Vec<(usize, usize)> = vec![(kernel as usize, 0)];
    state[kernel as usize] = 1;
    while let Some(&mut (f, ref mut pc)) = path.last_mut() {
        let func = &m.functions[f];
        if *pc == 0 {
            need[f] = func.regs.len();
            depth[f] = 1;
        }
        let mut descend = None;
        while *pc < func.code.len() {
            let i = func.code[*pc];
            if !device_op(i.op) {
                return Err(format!(
                    "instruction `{}` is not available in device function `{}`",
                    i.op.mnemonic(),
                    func.name
                ));
            }
            if i.op == Op::Barrier || WaveOp::of(i.op).is_some() {
                has_rendezvous = true;
            }
            if i.op == Op::Call {
                let c = usize::from(i.c);
                let Some(callee) = m.functions.get(c) else {
                    return Err(format!("call of missing function {c}"));
                };
                if callee.kind != FnKind::Device {
                    return Err(format!(
                        "`{}` calls non-device function `{}`",
                        func.name, callee.name
                    ));
                }
                match state[c] {
                    1 => return Err(format!("recursive device function `{}`", callee.name)),
                    0 => {
                        descend = Some(c);
                        break;
                    }
                    _ => {
                        need[f] = need[f].max(usize::from(i.b) + need[c]);
                        depth[f] = depth[f].max(1 + depth[c]);
                    }
                }
            }
            *pc += 1;
        }
        match descend {
            // Scan the callee first; this call instruction is revisited once it is done.
            Some(c) => {
                state[c] = 1;
                path.push((c, 0));
            }
            None => {
                state[f] = 2;
                path.pop();
            }
        }
    }
    let stack_cells = need[kernel as usize];
    if stack_cells > MAX_STACK_CELLS {
        return Err(format!(
            "an item needs {stack_cells} registers (at most {MAX_STACK_CELLS})"
        ));
    }
    let shared_bytes = k
        .shared
        .iter()
        .map(|d| d.elem.size() as u64 * u64::from(d.len))
        .sum();
    Ok(Plan {
        has_rendezvous,
        stack_cells,
        max_depth: depth[kernel as usize],
        shared_bytes,
    })
}
