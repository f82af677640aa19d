//! The PTX emitter on synthetic kernels: one kernel holding every device opcode (integer
//! operands and conversion sources at every width), lowered for several architectures and
//! assembled with `ptxas` when it is available (`$CAJETA_PTXAS`, else `PATH`; under CI its
//! absence is a failure). Also the refusals: host-only instructions, recursion, malformed
//! architectures — each an `Err(LowerError)` naming the cause, never a panic.

use cajeta_backends::cuda::ptx::{self, ParamAbi, SiteKind};
use cajeta_bytecode::{
    Const, FnKind, Function, Instr, MathFn, Module, Op, Operand, RegClass, Scalar, SharedDecl, Type,
};
use std::path::PathBuf;
use std::process::Command;

/// Integer-like scalars, the sources of `wrap.*`, `cvt.f*.s/u` and shift amounts.
const INTLIKE: [Scalar; 10] = [
    Scalar::Bool,
    Scalar::Char,
    Scalar::I8,
    Scalar::U8,
    Scalar::I16,
    Scalar::U16,
    Scalar::I32,
    Scalar::U32,
    Scalar::I64,
    Scalar::U64,
];

fn function(name: &str, kind: FnKind, params: u16, regs: Vec<Type>, code: Vec<Instr>) -> Function {
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

/// The element scalar named by a memory opcode's mnemonic (`ld.i8`, `atom.add.f32`).
fn mem_elem(op: Op) -> Scalar {
    let s = op.mnemonic().rsplit('.').next().unwrap_or("");
    Scalar::ALL
        .into_iter()
        .find(|x| x.suffix() == s)
        .unwrap_or(Scalar::I32)
}

/// True for the opcodes a kernel may contain that this generator builds.
fn generated(op: Op) -> bool {
    !op.is_host_only()
        && !matches!(
            op,
            Op::GetField
                | Op::SetField
                | Op::Call
                | Op::Ret
                | Op::RetVoid
                | Op::Jmp
                | Op::JmpIf
                | Op::JmpIfNot
                | Op::LoadNull
                | Op::EqStr
                | Op::EqRef
                | Op::Math1F32
                | Op::Math1F64
                | Op::PowF32
                | Op::PowF64
                | Op::Atan2F32
                | Op::Atan2F64
                | Op::KernelAttr
        )
}

/// One kernel with every generated opcode, each on fresh registers; `math` adds the `Math`
/// functions the backend lowers.
fn all_ops_kernel() -> Module {
    let mut regs: Vec<Type> = vec![Type::Buffer(Scalar::F32), Type::Scalar(Scalar::U32)];
    let mut code = vec![];
    let new_reg = |regs: &mut Vec<Type>, t: Type| {
        regs.push(t);
        (regs.len() - 1) as u16
    };
    for &op in Op::ALL {
        if !generated(op) {
            continue;
        }
        let [oa, ob, oc] = op.operands();
        // Integer-like operands vary over every source scalar for conversions and shifts.
        let variants: &[Scalar] = if op.mnemonic().starts_with("wrap.")
            || matches!(op, Op::SToF32 | Op::UToF32 | Op::SToF64 | Op::UToF64)
            || matches!(oc, Operand::Src(RegClass::Int))
        {
            &INTLIKE
        } else {
            &[Scalar::I64]
        };
        let spaces: &[bool] = if [oa, ob, oc].contains(&Operand::Src(RegClass::DevMem)) {
            &[false, true]
        } else {
            &[false]
        };
        for (&v, &shared) in variants
            .iter()
            .flat_map(|v| spaces.iter().map(move |s| (v, s)))
        {
            let slot = |o: Operand, regs: &mut Vec<Type>, bc: &mut Option<u32>| -> u16 {
                let class = match o {
                    Operand::Dst(c) | Operand::Src(c) => c,
                    Operand::Imm16 => {
                        return match op {
                            Op::Geom => (code.len() % 17) as u16,
                            Op::Fence => (code.len() % 2) as u16,
                            Op::SharedRef => 0,
                            _ => 3,
                        }
                    }
                    Operand::Const => {
                        *bc = Some(0);
                        return 0;
                    }
                    Operand::Imm32 => {
                        *bc = Some(7);
                        return 0;
                    }
                    _ => return 0,
                };
                let t = match class {
                    RegClass::Is(t) => t,
                    RegClass::Int | RegClass::IntLike => {
                        if v == Scalar::Bool || v == Scalar::Char {
                            if matches!(class, RegClass::Int) {
                                Type::Scalar(Scalar::U16)
                            } else {
                                Type::Scalar(v)
                            }
                        } else {
                            Type::Scalar(v)
                        }
                    }
                    RegClass::Any => Type::Scalar(Scalar::F64),
                    RegClass::DevMem if shared => Type::Shared(mem_elem(op)),
                    RegClass::DevMem | RegClass::Buffer => Type::Buffer(mem_elem(op)),
                    RegClass::Shared => Type::Shared(Scalar::I32),
                    _ => Type::Scalar(Scalar::I64),
                };
                new_reg(regs, t)
            };
            let mut bc = None;
            let a = slot(oa, &mut regs, &mut bc);
            if op.mnemonic().starts_with("atom.cas.") {
                // The desired value of a compare-exchange is r[a + 1], of r[a]'s type.
                let t = regs[usize::from(a)];
                new_reg(&mut regs, t);
            }
            let b = slot(ob, &mut regs, &mut bc);
            let c = slot(oc, &mut regs, &mut bc);
            code.push(match bc {
                Some(x) if matches!(ob, Operand::Const | Operand::Imm32) => {
                    Instr::with_bc(op, a, if op == Op::LoadK { 0 } else { x })
                }
                _ => Instr::new(op, a, b, c),
            });
            if op == Op::LoadK {
                // The constant's kind must match the destination: float64 bits of 1.5.
                regs[usize::from(a)] = Type::Scalar(Scalar::F64);
            }
        }
    }
    // Every Math function on both float types: the exact ones as instructions, the float32
    // transcendentals as the hardware approximations or our recipes, the float64 ones as
    // recipes (`devmath`).
    for f in MathFn::ALL {
        for (op, t) in [(Op::Math1F32, Scalar::F32), (Op::Math1F64, Scalar::F64)] {
            let a = new_reg(&mut regs, Type::Scalar(t));
            let b = new_reg(&mut regs, Type::Scalar(t));
            code.push(Instr::new(op, a, b, f as u16));
        }
    }
    code.push(Instr::new(Op::RetVoid, 0, 0, 0));
    let mut k = function("t.AllOps.k", FnKind::Kernel, 2, regs, code);
    k.shared = vec![SharedDecl {
        elem: Scalar::I32,
        len: 64,
    }];
    Module {
        consts: vec![Const::Bits(1.5f64.to_bits())],
        functions: vec![k],
        ..Module::default()
    }
}

fn ptxas() -> Option<PathBuf> {
    let found = match std::env::var_os("CAJETA_PTXAS") {
        Some(p) => Some(PathBuf::from(p)).filter(|p| p.is_file()),
        None => Command::new("ptxas")
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|_| PathBuf::from("ptxas")),
    };
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "ptxas is required under CI (CAJETA_PTXAS)"
        );
        eprintln!("ptxas unavailable: lowering only");
    }
    found
}

fn assemble(ptxas: &PathBuf, text: &str, gpu: &str, tag: &str) {
    let file =
        std::env::temp_dir().join(format!("cajeta-ptx-ops-{}-{tag}.ptx", std::process::id()));
    std::fs::write(&file, text).expect("write ptx");
    let out = Command::new(ptxas)
        .args(["--gpu-name", gpu])
        .arg(&file)
        .args(["-o", "/dev/null"])
        .output()
        .expect("run ptxas");
    let _ = std::fs::remove_file(&file);
    assert!(
        out.status.success(),
        "ptxas {gpu} failed:\n{}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_device_opcode_lowers_and_assembles() {
    let m = all_ops_kernel();
    let ptxas = ptxas();
    for (arch, gpu) in [("sm_70", "sm_70"), ("sm_80", "sm_80"), ("sm_90", "sm_90")] {
        let l = ptx::lower(&m, 0, arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert_eq!(
            l.params,
            vec![ParamAbi::Buffer(Scalar::F32), ParamAbi::Scalar(Scalar::U32)]
        );
        assert_eq!(l.shared_bytes, 256);
        // Every division has a zero check; signed ones an overflow check; every access a
        // bounds check.
        let count =
            |pred: &dyn Fn(&SiteKind) -> bool| l.sites.iter().filter(|s| pred(&s.kind)).count();
        assert_eq!(
            count(&|k| *k == SiteKind::DivZero),
            16,
            "{arch}: div/rem sites"
        );
        assert_eq!(
            count(&|k| *k == SiteKind::Overflow),
            4,
            "{arch}: signed div sites"
        );
        // One per ld/st/atom instance, each on a buffer and on shared memory.
        let mem_ops = Op::ALL
            .iter()
            .filter(|op| {
                let m = op.mnemonic();
                m.starts_with("ld.") || m.starts_with("st.") || m.starts_with("atom.")
            })
            .count();
        assert_eq!(
            count(&|k| matches!(k, SiteKind::Bounds { .. })),
            2 * mem_ops
        );
        if arch == "sm_70" {
            assert!(!l.text.contains("redux.sync"), "sm_70 has no redux.sync");
        } else {
            assert!(l.text.contains("redux.sync.add.u32"));
        }
        for needle in [
            "$Lfm",
            "cvt.rzi.s32.f32",
            "shfl.sync.idx.b32",
            "atom.shared.add.f32",
            "atom.global.cas.b32",
            "atom.shared.cas.b64",
            "atom.global.exch.b64",
            "atom.shared.min.s32",
            "atom.global.max.u64",
            "$Lam",
            "popc.b32",
            "brev.b32",
            "shf.l.wrap.b32",
            "vote.sync.ballot.b32",
            "bar.warp.sync",
            "membar.",
            "max.f32",
            "mul.lo.u32",
        ] {
            assert!(l.text.contains(needle), "{arch}: no {needle}");
        }
        if let Some(p) = &ptxas {
            assemble(p, &l.text, gpu, arch);
        }
    }
}

#[test]
fn inlined_device_calls_record_their_frames() {
    // kernel: r0 = buffer<int32>, r1 = int64 index; calls dev(r0, r1) at pc 0.
    // dev: loads element r1 of r0 (pc 0), returns it.
    let kernel = function(
        "t.K.k",
        FnKind::Kernel,
        2,
        vec![
            Type::Buffer(Scalar::I32),
            Type::Scalar(Scalar::I64),
            Type::Scalar(Scalar::I32),
            Type::Buffer(Scalar::I32),
            Type::Scalar(Scalar::I64),
        ],
        vec![
            Instr::new(Op::Mov, 3, 0, 0),
            Instr::new(Op::Mov, 4, 1, 0),
            Instr::new(Op::Call, 2, 3, 1),
            Instr::new(Op::RetVoid, 0, 0, 0),
        ],
    );
    let mut dev = function(
        "t.K.dev",
        FnKind::Device,
        2,
        vec![
            Type::Buffer(Scalar::I32),
            Type::Scalar(Scalar::I64),
            Type::Scalar(Scalar::I32),
        ],
        vec![
            Instr::new(Op::DevGetI32, 2, 0, 1),
            Instr::new(Op::Ret, 2, 0, 0),
        ],
    );
    dev.ret = Some(Type::Scalar(Scalar::I32));
    dev.locals = vec![cajeta_bytecode::LocalName {
        reg: 0,
        name: "data".into(),
    }];
    let m = Module {
        functions: vec![kernel, dev],
        ..Module::default()
    };
    let l = ptx::lower(&m, 0, "sm_90").expect("lower");
    assert_eq!(l.sites.len(), 1);
    assert_eq!(
        l.sites[0].kind,
        SiteKind::Bounds {
            shared: false,
            var: "data".into()
        }
    );
    assert_eq!(l.sites[0].frames, vec![(1, 0), (0, 2)]);
    assert_eq!(l.entry, "cj_t_2EK_2Ek");
    if let Some(p) = ptxas() {
        assemble(&p, &l.text, "sm_90", "inline");
    }

    // Recursion is refused, naming the function.
    let mut rec = m.clone();
    rec.functions[1].code = vec![Instr::new(Op::Call, 2, 0, 1), Instr::new(Op::Ret, 2, 0, 0)];
    let e = ptx::lower(&rec, 0, "sm_90").expect_err("recursion");
    assert!(
        e.message.contains("recursive device function `t.K.dev`"),
        "{e}"
    );
}

#[test]
fn refusals_are_errors_naming_the_cause() {
    let k = |code: Vec<Instr>, regs: Vec<Type>| Module {
        consts: vec![Const::Str("s".into())],
        functions: vec![function("t.K.k", FnKind::Kernel, 0, regs, code)],
        ..Module::default()
    };
    let ret = Instr::new(Op::RetVoid, 0, 0, 0);
    let ok = k(vec![ret], vec![]);
    for arch in ["sm_", "sm_6x", "compute_80", "sm_80x", ""] {
        let e = ptx::lower(&ok, 0, arch).expect_err(arch);
        assert!(
            e.message.contains("invalid CUDA architecture"),
            "{arch}: {e}"
        );
    }
    let e = ptx::lower(&ok, 0, "sm_61").expect_err("old arch");
    assert!(e.message.contains("not supported"), "{e}");
    assert!(ptx::lower(&ok, 0, "sm_90a").is_ok());
    assert!(ptx::lower(&ok, 7, "sm_90").is_err());

    // float64 sin and pow have recipes (`devmath`): lowered, with no fused operation.
    for ins in [
        Instr::new(Op::Math1F64, 0, 0, MathFn::Sin as u16),
        Instr::new(Op::PowF64, 0, 0, 0),
    ] {
        let f = k(vec![ins, ret], vec![Type::Scalar(Scalar::F64)]);
        let text = ptx::lower(&f, 0, "sm_90").expect("a recipe").text;
        assert!(
            text.contains("mul.rn.f64") && !text.contains("fma"),
            "{text}"
        );
    }

    let print = k(vec![Instr::new(Op::Print, 0, 0, 0), ret], vec![Type::Str]);
    let e = ptx::lower(&print, 0, "sm_90").expect_err("print");
    assert!(e.message.contains("`print`"), "{e}");
    assert_eq!(e.kernel, "t.K.k");

    let host = Module {
        functions: vec![function("t.K.h", FnKind::Host, 0, vec![], vec![ret])],
        ..Module::default()
    };
    assert!(ptx::lower(&host, 0, "sm_90").is_err());
}

#[test]
fn entry_names_are_injective_identifiers() {
    let names = ["a.b_c", "a_b.c", "a.b.c", "A.B", "x$y"];
    let mangled: Vec<String> = names.iter().map(|n| ptx::entry_name(n)).collect();
    for (i, m) in mangled.iter().enumerate() {
        assert!(
            m.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
            "{m}"
        );
        for other in &mangled[i + 1..] {
            assert_ne!(m, other);
        }
    }
}

#[test]
fn float_wave_sum_is_the_butterfly_in_spec_order() {
    // r1 := wave.sum.f32 r0 (XPU §5.3: distances 1, 2, 4, … W/2 in this order).
    let k = function(
        "t.W.k",
        FnKind::Kernel,
        0,
        vec![Type::Scalar(Scalar::F32), Type::Scalar(Scalar::F32)],
        vec![
            Instr::new(Op::WaveSumF32, 1, 0, 0),
            Instr::new(Op::RetVoid, 0, 0, 0),
        ],
    );
    let m = Module {
        functions: vec![k],
        ..Module::default()
    };
    let text = ptx::emit_ptx(&m, 0, "sm_90").expect("lower");
    let distances: Vec<u32> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("xor.b32 "))
        .filter_map(|l| l.trim_end_matches(';').rsplit(", ").next()?.parse().ok())
        .collect();
    assert_eq!(distances, vec![1, 2, 4, 8, 16]);
    assert_eq!(
        text.matches("add.rn.f32").count(),
        5,
        "one rounding per step"
    );
    assert_eq!(text.matches("shfl.sync.idx.b32").count(), 5);
}

/// XPU §8.3: cuda allows shared memory up to the device's per-block maximum, opting in above
/// 48 KiB — but a PTX module may declare at most 48 KiB of static shared memory. Beyond that
/// the static arrays live at the start of the dynamic memory (after which the dynamic array
/// follows), the launch adds their bytes to its dynamic size, and the module assembles.
#[test]
fn static_shared_beyond_48_kib_lives_in_the_dynamic_memory() {
    let kernel = |lens: [u32; 3]| {
        // kernel(buffer<int32> r0): s0[1] = 7 (int32), s1[2] = r0[0] (float64 of it),
        // dyn[0] = 1.
        let mut k = function(
            "t.Big.k",
            FnKind::Kernel,
            1,
            vec![
                Type::Buffer(Scalar::I32),
                Type::Shared(Scalar::I32),
                Type::Shared(Scalar::F64),
                Type::Shared(Scalar::I32),
                Type::Scalar(Scalar::I64),
                Type::Scalar(Scalar::I32),
                Type::Scalar(Scalar::F64),
            ],
            vec![
                Instr::new(Op::SharedRef, 1, 0, 0),
                Instr::new(Op::SharedRef, 2, 1, 0),
                Instr::new(Op::SharedRef, 3, 2, 0),
                Instr::with_bc(Op::LoadI, 4, 1),
                Instr::with_bc(Op::LoadI, 5, 7),
                Instr::new(Op::DevSetI32, 1, 4, 5),
                Instr::new(Op::DevGetI32, 5, 0, 4),
                Instr::new(Op::SToF64, 6, 5, 0),
                Instr::new(Op::DevSetF64, 2, 4, 6),
                Instr::new(Op::DevSetI32, 3, 4, 5),
                Instr::new(Op::RetVoid, 0, 0, 0),
            ],
        );
        k.shared = lens
            .iter()
            .zip([Scalar::I32, Scalar::F64, Scalar::I32])
            .map(|(&len, elem)| SharedDecl { elem, len })
            .collect();
        Module {
            functions: vec![k],
            ..Module::default()
        }
    };
    let ptxas = ptxas();
    for (lens, moved) in [
        ([12288, 0, 0], false),
        ([12289, 8, 0], true),
        ([64, 6200, 0], true),
    ] {
        let m = kernel(lens);
        let l = ptx::lower(&m, 0, "sm_90").expect("lowers");
        assert_eq!(l.static_in_dynamic, moved, "{lens:?}");
        assert_eq!(
            l.text.contains(".shared .align 8 .b8 cj_sh"),
            !moved,
            "{}",
            l.text
        );
        if let Some(p) = &ptxas {
            assemble(p, &l.text, "sm_90", &format!("big-shared-{}", lens[0]));
        }
    }
}
