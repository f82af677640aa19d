//! Unit tests of the cpu backend's internals: opcode coverage of the interpreter, the kernel
//! plan, and deferred release through the backend's registry.

use cajeta_bytecode::{verify, Const, FnKind, Function, Instr, Module, Op, Operand, Scalar, Type};

use super::interp::{self, Env, FaultKind, Item, Stop};
use super::plan::{device_op, plan, Plan};
use super::*;

fn func(name: &str, kind: FnKind, params: u16, regs: Vec<Type>, code: Vec<Instr>) -> Function {
    Function {
        name: name.into(),
        kind,
        params,
        ret: None,
        regs,
        code,
        file: 0,
        lines: vec![],
        regions: vec![],
        locals: vec![],
        shared: vec![],
        inlined: vec![],
    }
}

fn module(functions: Vec<Function>) -> Module {
    Module {
        files: vec!["t.cajeta".into()],
        functions,
        ..Module::default()
    }
}

/// Every opcode the plan admits in device code has an interpreter arm: run it once on a frame
/// of zeros and check it never reports "not available in device code". The one-instruction
/// functions are deliberately not verified (most have ill-typed operands): the interpreter must
/// stay panic-free and sound on any bytecode, which this also exercises.
#[test]
fn every_device_opcode_is_interpreted() {
    for &op in Op::ALL {
        if !device_op(op) || op == Op::Call {
            continue;
        }
        // Jumps go to the `retvoid` at pc 1; everything else reads and writes r0..r2.
        let ins = if op.operands()[1] == Operand::Target {
            Instr::with_bc(op, 0, 1)
        } else {
            Instr::new(op, 0, 0, 0)
        };
        let f = func(
            "T.k",
            FnKind::Kernel,
            0,
            vec![Type::Scalar(Scalar::U64); 3],
            vec![ins, Instr::new(Op::RetVoid, 0, 0, 0)],
        );
        let m = module(vec![f]);
        let p = Plan {
            has_rendezvous: false,
            stack_cells: 3,
            max_depth: 1,
            shared_bytes: 0,
        };
        let env = Env {
            module: &m,
            mems: &[],
            nbuf: 0,
            plan: &p,
        };
        let mut it = Item::new(3).unwrap();
        it.start(0, &[0; 3]);
        let stop = interp::run(&env, &mut it);
        assert!(
            !matches!(stop, Stop::Fault(FaultKind::Internal(_))),
            "`{}` is not interpreted: {stop:?}",
            op.mnemonic()
        );
    }
}

#[test]
fn plan_finds_barriers_depth_and_stack_needs() {
    let u = Type::Scalar(Scalar::U32);
    // k (4 regs) calls d1 at window 2; d1 (3 regs) calls d2 (5 regs, a barrier) at window 1.
    let k = func(
        "T.k",
        FnKind::Kernel,
        0,
        vec![u; 4],
        vec![
            Instr::new(Op::Call, 0, 2, 1),
            Instr::new(Op::RetVoid, 0, 0, 0),
        ],
    );
    let d1 = func(
        "T.d1",
        FnKind::Device,
        0,
        vec![u; 3],
        vec![
            Instr::new(Op::Call, 0, 1, 2),
            Instr::new(Op::RetVoid, 0, 0, 0),
        ],
    );
    let d2 = func(
        "T.d2",
        FnKind::Device,
        0,
        vec![u; 5],
        vec![
            Instr::new(Op::Barrier, 0, 0, 0),
            Instr::new(Op::RetVoid, 0, 0, 0),
        ],
    );
    let m = module(vec![k, d1, d2]);
    verify(&m).unwrap();
    let p = plan(&m, 0).unwrap();
    assert!(p.has_rendezvous);
    assert_eq!((p.stack_cells, p.max_depth), (2 + 1 + 5, 3));
    // Without d1's call, no barrier is reachable.
    let mut m2 = m.clone();
    m2.functions[1].code[0] = Instr::new(Op::Nop, 0, 0, 0);
    let p = plan(&m2, 0).unwrap();
    assert!(!p.has_rendezvous);
    assert_eq!((p.stack_cells, p.max_depth), (2 + 3, 2));
}

#[test]
fn plan_counts_wave_collectives_as_rendezvous() {
    let u = Type::Scalar(Scalar::U32);
    let f = Type::Scalar(Scalar::F32);
    for (op, t) in [(Op::WaveSumU32, u), (Op::WaveSumF32, f)] {
        let k = func(
            "T.k",
            FnKind::Kernel,
            0,
            vec![t; 2],
            vec![
                Instr::new(Op::LoadK, 1, 0, 0),
                Instr::new(op, 0, 1, 0),
                Instr::new(Op::RetVoid, 0, 0, 0),
            ],
        );
        let mut m = module(vec![k]);
        m.consts = vec![Const::Bits(0)];
        verify(&m).unwrap();
        assert!(plan(&m, 0).unwrap().has_rendezvous, "{}", op.mnemonic());
    }
    // Wave geometry alone needs no switching.
    let k = func(
        "T.k",
        FnKind::Kernel,
        0,
        vec![u],
        vec![
            Instr::new(Op::Geom, 0, 16, 0),
            Instr::new(Op::RetVoid, 0, 0, 0),
        ],
    );
    let m = module(vec![k]);
    verify(&m).unwrap();
    assert!(!plan(&m, 0).unwrap().has_rendezvous);
}

#[test]
fn plan_refuses_recursion_and_non_kernels() {
    let u = Type::Scalar(Scalar::U32);
    let k = func(
        "T.k",
        FnKind::Kernel,
        0,
        vec![u],
        vec![
            Instr::new(Op::Call, 0, 0, 1),
            Instr::new(Op::RetVoid, 0, 0, 0),
        ],
    );
    let d = func(
        "T.d",
        FnKind::Device,
        0,
        vec![u],
        vec![
            Instr::new(Op::Call, 0, 0, 1),
            Instr::new(Op::RetVoid, 0, 0, 0),
        ],
    );
    let m = module(vec![k, d]);
    verify(&m).unwrap();
    assert_eq!(plan(&m, 0).unwrap_err(), "recursive device function `T.d`");
    assert!(plan(&m, 1).unwrap_err().contains("is not a kernel"));
    assert!(plan(&m, 7).is_err());
}

#[test]
fn release_waits_for_in_flight_launches() {
    let b = CpuBackend::with_config(CpuConfig::default());
    let id = b.alloc(64, MemoryKind::Device, false).unwrap();
    // What a running launch holds.
    let in_flight = b.storage(id).unwrap();
    b.release(id);
    assert!(b.storage(id).is_none(), "the VM's reference is gone");
    let st = b.mem_stats();
    assert_eq!((st.live, st.frees), (64, 0), "memory kept for the launch");
    drop(in_flight);
    let st = b.mem_stats();
    assert_eq!((st.live, st.frees), (0, 1));
}

#[test]
fn scalar_arguments_are_canonicalised() {
    assert_eq!(canonical(Scalar::I8, 0xff), u64::MAX);
    assert_eq!(canonical(Scalar::U16, u64::MAX), 0xffff);
    assert_eq!(canonical(Scalar::Bool, 2), 1);
    assert_eq!(canonical(Scalar::F32, u64::MAX), 0xffff_ffff);
}

#[test]
fn environment_values() {
    let c = |w, s| CpuConfig::from_values(w, s);
    assert_eq!(
        c(None, None),
        CpuConfig {
            workers: 0,
            serial: false
        }
    );
    assert_eq!(
        c(Some("3"), Some("1")),
        CpuConfig {
            workers: 3,
            serial: true
        }
    );
    assert_eq!(
        c(Some("x"), Some("0")),
        CpuConfig {
            workers: 0,
            serial: false
        }
    );
    assert_eq!(
        c(Some(" 2 "), Some("yes")),
        CpuConfig {
            workers: 2,
            serial: false
        }
    );
    let b = CpuBackend::with_config(c(Some("0"), None));
    assert!(b.workers() >= 1);
    b.set_worker_cap(5);
    assert_eq!((b.worker_cap(), b.workers()), (5, 5));
}

#[test]
fn cpu_runs_every_power_of_two_wave_width_up_to_64() {
    use crate::Backend;
    let b = CpuBackend::new();
    for w in [1, 2, 4, 8, 16, 32, 64] {
        assert!(b.supports_wave_width(w), "{w}");
    }
    for w in [0, 3, 12, 128] {
        assert!(!b.supports_wave_width(w), "{w}");
    }
    // Capability ordinals: CoopMatrixBf16F32Acc (2) and AtomicInt64 (3) only (XPU §2.10).
    assert_eq!(
        (0..5).map(|c| b.supports(c)).collect::<Vec<_>>(),
        [false, false, true, true, false]
    );
}
