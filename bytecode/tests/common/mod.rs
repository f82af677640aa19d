//! Shared test fixtures: a valid module using every opcode and every type form, and a small
//! deterministic PRNG (no external crates).
#![allow(
    dead_code,
    reason = "each test binary uses a different subset of these fixtures"
)]

use cajeta_bytecode::opcodes::{Operand, RegClass};
use cajeta_bytecode::*;

/// xorshift64*: small, deterministic, good enough to drive property tests.
pub struct Rng(u64);

impl Rng {
    /// A generator from a non-zero seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A random byte.
    pub fn byte(&mut self) -> u8 {
        self.next() as u8
    }
}

/// Registers of a function under construction: one per distinct type, allocated on demand,
/// after the parameters.
pub struct Regs {
    pub types: Vec<Type>,
    params: usize,
}

impl Regs {
    pub fn new(params: &[Type]) -> Regs {
        Regs {
            types: params.to_vec(),
            params: params.len(),
        }
    }

    /// Registers of the given types, the first `params` of them parameters.
    pub fn with_params(types: Vec<Type>, params: usize) -> Regs {
        Regs { types, params }
    }

    /// The (non-parameter) register of type `t`, allocated on first use.
    pub fn of(&mut self, t: Type) -> u16 {
        if let Some(i) = self.types[self.params..].iter().position(|&x| x == t) {
            return (self.params + i) as u16;
        }
        self.fresh(t)
    }

    /// Code writing every non-parameter register (V-DEF): zero, null, or the first shared
    /// array; `zero` is a constant index of `Const::Bits(0)`.
    pub fn prologue(&self, zero: u32) -> Vec<Instr> {
        (self.params..self.types.len())
            .map(|r| {
                let r = r as u16;
                match self.types[usize::from(r)] {
                    Type::Scalar(s) if s.is_float() => Instr::with_bc(Op::LoadK, r, zero),
                    Type::Scalar(_) => Instr::with_bc(Op::LoadI, r, 0),
                    Type::Shared(_) => Instr::new(Op::SharedRef, r, 0, 0),
                    _ => Instr::new(Op::LoadNull, r, 0, 0),
                }
            })
            .collect()
    }

    /// A new register of type `t`.
    pub fn fresh(&mut self, t: Type) -> u16 {
        self.types.push(t);
        (self.types.len() - 1) as u16
    }
}

pub const F_EVERYTHING: u32 = 0;
pub const F_ADD: u32 = 1;
pub const F_CLINIT: u32 = 2;
pub const F_KERNEL: u32 = 3;
pub const F_HELPER: u32 = 4;
pub const F_LOG: u32 = 5;

pub const K_F64: u32 = 0;
pub const K_STR: u32 = 1;
pub const K_I32: u32 = 2;
pub const K_F32: u32 = 3;
pub const K_ZERO: u32 = 4;

pub const C_POINT: u32 = 0;
pub const C_HOLDER: u32 = 1;

/// The type a register must have to satisfy `class`, for the generic instruction builder.
fn type_for(class: RegClass) -> Type {
    match class {
        RegClass::Is(t) => t,
        RegClass::Any | RegClass::IntLike | RegClass::Int => Type::I32,
        RegClass::Ref => Type::Str,
        RegClass::Array => Type::Array(Elem::Scalar(Scalar::I32)),
        RegClass::Object => Type::Object(C_POINT),
        RegClass::Buffer | RegClass::DevMem => Type::Buffer(Scalar::I32),
        RegClass::Shared => Type::Shared(Scalar::I32),
    }
}

/// A valid instance of `op` for the function `Demo.everything` (which returns `String`).
/// Returns `None` for `retvoid`, which that function cannot contain.
pub fn valid_instr(op: Op, regs: &mut Regs, pc: u32) -> Option<Instr> {
    // Device-only operations cannot appear in this host function (V-SIDE), and the xpu
    // operations with cross-operand rules are covered by their own verifier tests.
    let xfer = op.mnemonic().starts_with("buf.upload")
        || op.mnemonic().starts_with("buf.download")
        || op.mnemonic().starts_with("buf.host");
    if op.is_device_only()
        || xfer
        || matches!(op, Op::BufSlice | Op::Launch | Op::Geom | Op::Format)
    {
        return None;
    }
    let ops = op.operands();
    let mut slots = [0u16; 3];
    let mut bc: Option<u32> = None;
    for (slot, o) in ops.iter().enumerate() {
        match *o {
            Operand::N | Operand::Special | Operand::Field => {}
            Operand::Dst(c) | Operand::Src(c) => slots[slot] = regs.of(type_for(c)),
            Operand::Imm16 => slots[slot] = 3,
            Operand::Imm32 => bc = Some(7),
            Operand::Const => bc = Some(K_STR),
            Operand::Target => bc = Some(pc + 1),
            Operand::Func => slots[slot] = F_LOG as u16,
            Operand::Class => bc = Some(C_POINT),
            Operand::Static => slots[slot] = 0,
            Operand::MathFn => slots[slot] = MathFn::Sqrt as u16,
        }
    }
    let [mut a, mut b, mut c] = slots;
    match op {
        Op::RetVoid => return None,
        Op::LoadK => a = regs.of(Type::Str),
        Op::Call => {
            // Demo.log(String) -> void.
            a = 0;
            b = regs.fresh(Type::Str);
        }
        Op::Ret | Op::RetOwn => a = regs.of(Type::Str),
        Op::GetField => {
            a = regs.of(Type::F64);
            b = regs.of(Type::Object(C_POINT));
            c = 0;
        }
        Op::SetField => {
            a = regs.of(Type::Object(C_POINT));
            b = 1;
            c = regs.of(Type::Object(C_POINT));
        }
        Op::GetStatic | Op::SetStatic => a = regs.of(Type::I32),
        // Selector 3 (`integrated()`) is a boolean query.
        Op::DeviceQuery => a = regs.of(Type::BOOL),
        Op::ArrGetRef => {
            a = regs.of(Type::Str);
            b = regs.of(Type::Array(Elem::Str));
        }
        Op::ArrSetRef => {
            a = regs.of(Type::Array(Elem::Str));
            c = regs.of(Type::Str);
        }
        Op::ArrOwnGet | Op::ArrOwnTake => b = regs.of(Type::Array(Elem::Str)),
        Op::ArrOwnSet => a = regs.of(Type::Array(Elem::Str)),
        _ => {
            let mn = op.mnemonic();
            if mn.starts_with("aget.") {
                let Type::Scalar(s) = regs.types[a as usize] else {
                    unreachable!()
                };
                b = regs.of(Type::Array(Elem::Scalar(s)));
            } else if mn.starts_with("aset.") {
                let Type::Scalar(s) = regs.types[c as usize] else {
                    unreachable!()
                };
                a = regs.of(Type::Array(Elem::Scalar(s)));
            }
        }
    }
    Some(match bc {
        Some(bc) => Instr::with_bc(op, a, bc),
        None => Instr::new(op, a, b, c),
    })
}

pub fn function(
    name: &str,
    kind: FnKind,
    params: u16,
    ret: Option<Type>,
    regs: Vec<Type>,
    code: Vec<Instr>,
) -> Function {
    Function {
        name: name.into(),
        kind,
        params,
        ret,
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

/// A valid module that uses every opcode and every type form.
pub fn sample_module() -> Module {
    // Demo.everything(int32) -> String: one valid instance of every opcode but retvoid,
    // plus an object-array access, a value-returning call and a float constant.
    let mut regs = Regs::new(&[Type::I32]);
    let mut code = Vec::new();
    for &op in Op::ALL {
        if let Some(i) = valid_instr(op, &mut regs, code.len() as u32) {
            code.push(i);
        }
    }
    let pts = regs.of(Type::Array(Elem::Object(C_POINT)));
    let pt = regs.of(Type::Object(C_POINT));
    let idx = regs.of(Type::I64);
    code.push(Instr::new(Op::ArrGetRef, pt, pts, idx));
    code.push(Instr::new(Op::ArrSetRef, pts, idx, pt));
    let f = regs.of(Type::F64);
    code.push(Instr::with_bc(Op::LoadK, f, K_F64));
    let f32r = regs.of(Type::Scalar(Scalar::F32));
    code.push(Instr::with_bc(Op::LoadK, f32r, K_F32));
    let i = regs.of(Type::I32);
    code.push(Instr::with_bc(Op::LoadK, i, K_I32));
    let args = regs.fresh(Type::I32);
    regs.fresh(Type::F64);
    code.push(Instr::new(Op::Mov, args, 0, 0));
    code.push(Instr::new(Op::Mov, args + 1, f, 0));
    code.push(Instr::new(Op::Call, i, args, F_ADD as u16));
    // The xpu host operations whose operands are related by a rule.
    let buf = regs.of(Type::Buffer(Scalar::I32));
    let arr = regs.of(Type::Array(Elem::Scalar(Scalar::I32)));
    let count = regs.of(Type::I64);
    let stream = regs.of(Type::Stream);
    for op in [
        Op::BufUpload,
        Op::BufDownload,
        Op::BufHostStore,
        Op::BufHostLoad,
    ] {
        code.push(Instr::new(op, buf, arr, 0));
    }
    code.push(Instr::new(Op::BufUploadN, buf, arr, count));
    code.push(Instr::new(Op::BufDownloadN, buf, arr, count));
    code.push(Instr::new(Op::BufUploadAsync, buf, arr, stream));
    code.push(Instr::new(Op::BufDownloadAsync, buf, arr, stream));
    let range = regs.fresh(Type::Scalar(Scalar::U64));
    regs.fresh(Type::Scalar(Scalar::U64));
    code.push(Instr::new(Op::BufSlice, buf, buf, range));
    let fmt_args = regs.fresh(Type::Array(Elem::Str));
    regs.fresh(Type::Array(Elem::Scalar(Scalar::F64)));
    let text = regs.of(Type::Str);
    code.push(Instr::new(Op::Format, text, text, fmt_args));
    // A launch of Demo.kernel(float32 buffer, int32): stream, 7 x int64, the parameters.
    let window = regs.fresh(Type::Stream);
    for _ in 0..7 {
        regs.fresh(Type::I64);
    }
    regs.fresh(Type::Buffer(Scalar::F32));
    regs.fresh(Type::I32);
    code.push(Instr::new(Op::Launch, window, F_KERNEL as u16, 0));
    regs.of(Type::Buffer(Scalar::F32));
    regs.of(Type::Stream);
    regs.of(Type::Array(Elem::Scalar(Scalar::Bool)));
    let s = regs.of(Type::Str);
    code.push(Instr::new(Op::Ret, s, 0, 0));
    let n = code.len() as u32;
    // Every register a parameter (V-DEF: no register is read unwritten); only the call to
    // Demo.add may clobber some (its frame), and no instruction after it reads those.
    let params = regs.types.len() as u16;
    let mut everything = function(
        "Demo.everything",
        FnKind::Host,
        params,
        Some(Type::Str),
        regs.types,
        code,
    );
    everything.file = 1;
    everything.lines = vec![
        LineEntry {
            pc: 0,
            line: 3,
            col: 5,
        },
        LineEntry {
            pc: 2,
            line: 3,
            col: 9,
        },
        LineEntry {
            pc: 4,
            line: 4,
            col: 1,
        },
        LineEntry {
            pc: n - 1,
            line: u32::MAX,
            col: 70000,
        },
    ];
    everything.regions = vec![
        Region {
            kind: RegionKind::Loop,
            header: 1,
            merge: 6,
            cont: 4,
        },
        Region {
            kind: RegionKind::If,
            header: 2,
            merge: 4,
            cont: 0,
        },
        Region {
            kind: RegionKind::If,
            header: 4,
            merge: 5,
            cont: 0,
        },
        Region {
            kind: RegionKind::Loop,
            header: 10,
            merge: 10,
            cont: 10,
        },
    ];
    everything.locals = vec![
        LocalName {
            reg: 0,
            name: "n".into(),
        },
        LocalName {
            reg: 1,
            name: "ünïcödé".into(),
        },
        LocalName {
            reg: 1,
            name: String::new(),
        },
    ];

    let add = function(
        "Demo.add",
        FnKind::Host,
        2,
        Some(Type::I32),
        vec![Type::I32, Type::F64, Type::I32],
        vec![
            Instr::new(Op::F64ToI32, 2, 1, 0),
            Instr::new(Op::AddI32, 2, 0, 2),
            Instr::new(Op::Ret, 2, 0, 0),
        ],
    );
    let clinit = function(
        "Demo.<clinit>",
        FnKind::Host,
        0,
        None,
        vec![Type::I32],
        vec![
            Instr::with_bc(Op::LoadI, 0, (-5i32) as u32),
            Instr::new(Op::SetStatic, 0, 0, 0),
            Instr::new(Op::RetVoid, 0, 0, 0),
        ],
    );
    // The kernel holds one valid instance of every device-only opcode, then its call.
    let mut kregs = Regs::new(&[Type::Buffer(Scalar::F32), Type::I32]);
    let mut kcode = vec![];
    let idx = kregs.of(Type::I64);
    // Kernel attributes lead the code (V-KATTR).
    kcode.push(Instr::new(Op::KernelAttr, 0, KernelAttrs::WAVE_WIDTH, 16));
    kcode.push(Instr::new(Op::KernelAttr, 0, KernelAttrs::MAX_THREADS, 256));
    kcode.push(Instr::new(Op::KernelAttr, 0, KernelAttrs::FAST_MATH, 1));
    let mut ops = vec![];
    for &op in Op::ALL.iter().filter(|op| op.is_device_only()) {
        let m = op.mnemonic();
        let elem = Scalar::ALL
            .iter()
            .copied()
            .find(|s| m.ends_with(&format!(".{}", s.suffix())));
        let i = match (op, elem) {
            (Op::Geom, _) => Instr::new(op, kregs.of(Type::Scalar(Scalar::U32)), 16, 0),
            (Op::Barrier | Op::WaveBarrier, _) => Instr::new(op, 0, 0, 0),
            (Op::KernelAttr, _) => continue,
            (Op::Fence, _) => Instr::new(op, 0, 1, 0),
            (Op::WaveBallot, _) => Instr::new(
                op,
                kregs.of(Type::Scalar(Scalar::U64)),
                kregs.of(Type::BOOL),
                0,
            ),
            (Op::SharedRef, _) => Instr::new(op, kregs.of(Type::Shared(Scalar::F32)), 0, 0),
            (Op::CheckIndex, _) => {
                let i = kregs.of(Type::Scalar(Scalar::I64));
                Instr::new(op, i, i, kregs.of(Type::Shared(Scalar::F32)))
            }
            (_, Some(e)) if m.starts_with("st.") => Instr::new(
                op,
                kregs.of(Type::Buffer(e)),
                idx,
                kregs.of(Type::Scalar(e)),
            ),
            (_, Some(e)) if m.starts_with("atom.cas.") => {
                // Expected value in r[a], desired value in r[a + 1].
                let a = kregs.fresh(Type::Scalar(e));
                kregs.fresh(Type::Scalar(e));
                Instr::new(op, a, kregs.of(Type::Buffer(e)), idx)
            }
            (_, Some(e)) if m.starts_with("wave.") => {
                let r = kregs.of(Type::Scalar(e));
                let c = if op.operands()[2] == Operand::N { 0 } else { r };
                Instr::new(op, r, r, c)
            }
            (_, Some(e)) => Instr::new(
                op,
                kregs.of(Type::Scalar(e)),
                kregs.of(Type::Buffer(e)),
                idx,
            ),
            (_, None) => panic!("no sample for device opcode `{m}`"),
        };
        ops.push(i);
    }
    let arg = kregs.fresh(Type::Scalar(Scalar::F32));
    kcode.extend(kregs.prologue(K_ZERO));
    kcode.extend(ops);
    let after = kcode.len() as u32 + 2;
    kcode.push(Instr::new(Op::Call, arg, arg, F_HELPER as u16));
    kcode.push(Instr::with_bc(Op::Jmp, 0, after));
    kcode.push(Instr::new(Op::RetVoid, 0, 0, 0));
    let mut kernel = function("Demo.kernel", FnKind::Kernel, 2, None, kregs.types, kcode);
    kernel.shared = vec![cajeta_bytecode::SharedDecl {
        elem: Scalar::F32,
        len: 4,
    }];
    let helper = function(
        "Demo.helper",
        FnKind::Device,
        1,
        Some(Type::Scalar(Scalar::F32)),
        vec![Type::Scalar(Scalar::F32)],
        vec![
            Instr::new(Op::Math1F32, 0, 0, MathFn::Rsqrt as u16),
            Instr::new(Op::Ret, 0, 0, 0),
        ],
    );
    let log = function(
        "Demo.log",
        FnKind::Host,
        1,
        None,
        vec![Type::Str],
        vec![
            Instr::new(Op::Print, 0, 2, 0),
            Instr::new(Op::RetVoid, 0, 0, 0),
        ],
    );

    Module {
        files: vec!["demo.cajeta".into(), "lib/other \"x\".cajeta".into()],
        consts: vec![
            Const::Bits(1.5f64.to_bits()),
            Const::Str("hé\n\"x\"\t\u{0}".into()),
            Const::Bits((-7i64) as u64),
            Const::Bits(u64::from(0.25f32.to_bits())),
            Const::Bits(0),
        ],
        classes: vec![
            Class {
                name: "Demo.Point".into(),
                fields: vec![
                    Field {
                        name: "x".into(),
                        ty: Type::F64,
                    },
                    Field {
                        name: "next".into(),
                        ty: Type::Object(C_POINT),
                    },
                ],
            },
            Class {
                name: "Demo.Holder".into(),
                fields: vec![
                    Field {
                        name: "items".into(),
                        ty: Type::Array(Elem::Object(C_POINT)),
                    },
                    Field {
                        name: "names".into(),
                        ty: Type::Array(Elem::Str),
                    },
                    Field {
                        name: "later".into(),
                        ty: Type::Object(C_HOLDER),
                    },
                ],
            },
        ],
        statics: vec![
            Static {
                name: "Demo.counter".into(),
                ty: Type::I32,
            },
            Static {
                name: "Demo.buf".into(),
                ty: Type::Buffer(Scalar::U8),
            },
        ],
        functions: vec![everything, add, clinit, kernel, helper, log],
        init: vec![F_CLINIT],
        // Any void host function without parameters may finalise; the same one will do.
        fini: vec![F_CLINIT],
        entry: Some(F_EVERYTHING),
    }
}

/// A minimal valid module: one host function `Main.main` with the given registers and code
/// (the code must end in a terminator for it to verify).
pub fn one_function(regs: Vec<Type>, ret: Option<Type>, code: Vec<Instr>) -> Module {
    Module {
        files: vec!["main.cajeta".into()],
        functions: vec![function("Main.main", FnKind::Host, 0, ret, regs, code)],
        ..Module::default()
    }
}
