//! Verifier tests: the sample module (every opcode) verifies, and each invariant has at least
//! one failing case that is reported under its name.

mod common;

use cajeta_bytecode::*;
use common::*;

/// Asserts that `m` fails verification with invariant `rule`, and returns the error.
#[track_caller]
fn rejects(m: &Module, rule: &str) -> VerifyError {
    match verify(m) {
        Ok(()) => panic!("verify accepted a module that breaks {rule}"),
        Err(e) => {
            assert_eq!(e.code, "CJB-E-VERIFY");
            assert_eq!(e.invariant(), rule, "wrong invariant: {e}");
            assert!(
                e.to_string().starts_with("cajeta: error[CJB-E-VERIFY]: "),
                "{e}"
            );
            e
        }
    }
}

/// The sample module with `f` applied.
fn sample_with(f: impl FnOnce(&mut Module)) -> Module {
    let mut m = sample_module();
    f(&mut m);
    m
}

/// A one-function module with the given register types and code followed by `retvoid`.
/// Every register is a parameter, so that no read is of an unwritten register (V-DEF).
fn body(regs: Vec<Type>, mut code: Vec<Instr>) -> Module {
    code.push(Instr::new(Op::RetVoid, 0, 0, 0));
    let params = regs.len() as u16;
    let mut m = one_function(regs, None, code);
    m.functions[0].params = params;
    m.consts = vec![
        Const::Bits(1),
        Const::Str("s".into()),
        Const::Bits(u64::MAX),
    ];
    m.classes = vec![Class {
        name: "P".into(),
        fields: vec![Field {
            name: "x".into(),
            ty: Type::F64,
        }],
    }];
    m.statics = vec![Static {
        name: "S.n".into(),
        ty: Type::I32,
    }];
    m
}

/// `m` with every register of its first function a parameter (so that V-DEF holds).
fn params_only(mut m: Module) -> Module {
    let f = &mut m.functions[0];
    f.params = f.regs.len() as u16;
    m
}

fn i(op: Op, a: u16, b: u16, c: u16) -> Instr {
    Instr::new(op, a, b, c)
}

const BOOL: Type = Type::BOOL;
const I32: Type = Type::I32;
const I64: Type = Type::I64;
const F64: Type = Type::F64;
const STR: Type = Type::Str;

#[test]
fn sample_module_verifies() {
    verify(&sample_module()).unwrap();
}

#[test]
fn sample_module_survives_a_round_trip_verified() {
    let m = decode(&encode(&sample_module())).unwrap();
    verify(&m).unwrap();
}

#[test]
fn error_carries_function_and_pc() {
    let m = body(vec![I32], vec![i(Op::Nop, 0, 0, 0), i(Op::AddI32, 0, 0, 9)]);
    let e = rejects(&m, "V-REG");
    assert_eq!(e.function.as_deref(), Some("Main.main"));
    assert_eq!(e.pc, Some(1));
    assert!(
        e.to_string().ends_with("(in function `Main.main` at pc 1)"),
        "{e}"
    );
}

// ---- module level ----

#[test]
fn v_type() {
    rejects(
        &sample_with(|m| m.classes[0].fields[1].ty = Type::Object(2)),
        "V-TYPE",
    );
    rejects(
        &sample_with(|m| m.statics[0].ty = Type::Array(Elem::Object(9))),
        "V-TYPE",
    );
    rejects(
        &sample_with(|m| m.functions[1].regs[2] = Type::Object(2)),
        "V-TYPE",
    );
    rejects(
        &sample_with(|m| m.functions[1].ret = Some(Type::Object(77))),
        "V-TYPE",
    );
}

#[test]
fn v_file() {
    rejects(&sample_with(|m| m.functions[2].file = 2), "V-FILE");
}

#[test]
fn v_frame() {
    rejects(&sample_with(|m| m.functions[1].params = 4), "V-FRAME");
    let m = body(vec![I32; 65536], vec![]);
    rejects(&m, "V-FRAME");
    verify(&body(vec![I32; 65535], vec![i(Op::Mov, 65534, 0, 0)])).unwrap();
}

#[test]
fn v_kernel() {
    rejects(
        &sample_with(|m| m.functions[F_KERNEL as usize].ret = Some(I32)),
        "V-KERNEL",
    );
}

#[test]
fn v_init() {
    rejects(&sample_with(|m| m.init.push(6)), "V-INIT");
    rejects(&sample_with(|m| m.init.push(F_ADD)), "V-INIT"); // has parameters
    rejects(&sample_with(|m| m.init.push(F_HELPER)), "V-INIT"); // device
                                                                // Finalisers follow the same rule.
    rejects(&sample_with(|m| m.fini.push(6)), "V-INIT");
    rejects(&sample_with(|m| m.fini.push(F_ADD)), "V-INIT");
    rejects(&sample_with(|m| m.fini.push(F_HELPER)), "V-INIT");
    rejects(
        &sample_with(|m| {
            let f = &mut m.functions[F_CLINIT as usize];
            f.ret = Some(I32);
            f.code[2] = i(Op::Ret, 0, 0, 0);
        }),
        "V-INIT",
    );
}

#[test]
fn v_entry() {
    rejects(&sample_with(|m| m.entry = Some(6)), "V-ENTRY");
    rejects(&sample_with(|m| m.entry = Some(F_KERNEL)), "V-ENTRY");
}

// ---- per instruction ----

#[test]
fn v_term() {
    rejects(&sample_with(|m| m.functions[1].code.clear()), "V-TERM");
    rejects(
        &sample_with(|m| m.functions[1].code.pop().map(drop).unwrap_or(())),
        "V-TERM",
    );
    // A conditional branch is not a terminator either.
    let mut m = body(vec![BOOL], vec![]);
    m.functions[0].code = vec![Instr::with_bc(Op::JmpIf, 0, 0)];
    rejects(&m, "V-TERM");
    // Every terminator is accepted as the last instruction.
    let mut m = body(vec![BOOL], vec![]);
    m.functions[0].code = vec![Instr::with_bc(Op::Jmp, 0, 0)];
    verify(&m).unwrap();
}

#[test]
fn v_zero() {
    rejects(&body(vec![I32], vec![i(Op::Nop, 0, 0, 1)]), "V-ZERO");
    rejects(&body(vec![I32], vec![i(Op::NegI32, 0, 0, 1)]), "V-ZERO");
    rejects(&body(vec![STR], vec![i(Op::LoadNull, 0, 1, 0)]), "V-ZERO");
    // Slot c after a 32-bit operand is the high half of `bc`, not an unused slot.
    let mut code = vec![i(Op::Nop, 0, 0, 0); 70_000];
    code[0] = Instr::with_bc(Op::Jmp, 0, 65_600);
    verify(&body(vec![], code)).unwrap();
}

#[test]
fn v_reg() {
    rejects(&body(vec![I32], vec![i(Op::AddI32, 0, 1, 0)]), "V-REG");
    rejects(&body(vec![I32], vec![i(Op::AddI32, 1, 0, 0)]), "V-REG");
    rejects(&body(vec![], vec![i(Op::GetStatic, 0, 0, 0)]), "V-REG");
    rejects(&body(vec![], vec![i(Op::Mov, 0, 0, 0)]), "V-REG");
}

#[test]
fn v_optype_each_register_class() {
    // Is(T)
    rejects(
        &body(vec![I32, I64], vec![i(Op::AddI32, 0, 0, 1)]),
        "V-OPTYPE",
    );
    // IntLike: a float is not integer-like (bool and char are).
    rejects(
        &body(vec![I32, F64], vec![i(Op::WrapI32, 0, 1, 0)]),
        "V-OPTYPE",
    );
    verify(&body(vec![I32, BOOL], vec![i(Op::WrapI32, 0, 1, 0)])).unwrap();
    // Int: boolean is not an integer.
    rejects(
        &body(vec![I32, BOOL], vec![i(Op::ShlI32, 0, 0, 1)]),
        "V-OPTYPE",
    );
    verify(&body(
        vec![I32, Type::Scalar(Scalar::U8)],
        vec![i(Op::ShlI32, 0, 0, 1)],
    ))
    .unwrap();
    // Ref
    rejects(&body(vec![I32], vec![i(Op::LoadNull, 0, 0, 0)]), "V-OPTYPE");
    verify(&body(vec![Type::Stream], vec![i(Op::LoadNull, 0, 0, 0)])).unwrap();
    // Array
    rejects(
        &body(vec![I64, STR], vec![i(Op::ArrLen, 0, 1, 0)]),
        "V-OPTYPE",
    );
    // Object
    rejects(
        &body(vec![STR], vec![Instr::with_bc(Op::NewObj, 0, 0)]),
        "V-OPTYPE",
    );
    // Dst is typed like Src (fma reads and writes a).
    rejects(
        &body(
            vec![F64, Type::Scalar(Scalar::F32)],
            vec![i(Op::FmaF32, 0, 1, 1)],
        ),
        "V-OPTYPE",
    );
}

#[test]
fn event_operands_are_typed() {
    let ev = Type::Event;
    let st = Type::Stream;
    verify(&body(
        vec![ev, st, BOOL],
        vec![
            i(Op::EventCreate, 0, 0, 0),
            i(Op::EventRecord, 0, 1, 0),
            i(Op::StreamWaitFor, 1, 0, 0),
            i(Op::EventQuery, 2, 0, 0),
            i(Op::EventWaitHost, 0, 0, 0),
            i(Op::EventDestroy, 0, 0, 0),
        ],
    ))
    .unwrap();
    // Stream and event swapped.
    rejects(
        &body(vec![ev, st], vec![i(Op::EventRecord, 1, 0, 0)]),
        "V-OPTYPE",
    );
    rejects(
        &body(vec![ev, st], vec![i(Op::StreamWaitFor, 0, 1, 0)]),
        "V-OPTYPE",
    );
    // query() is a boolean; an event is not a stream.
    rejects(
        &body(vec![ev, I32], vec![i(Op::EventQuery, 1, 0, 0)]),
        "V-OPTYPE",
    );
    rejects(
        &body(vec![st], vec![i(Op::EventCreate, 0, 0, 0)]),
        "V-OPTYPE",
    );
    assert!(Op::EventCreate.is_host_only() && Op::StreamWaitFor.is_host_only());
}

#[test]
fn v_jump() {
    rejects(&body(vec![], vec![Instr::with_bc(Op::Jmp, 0, 2)]), "V-JUMP");
    rejects(
        &body(vec![BOOL], vec![Instr::with_bc(Op::JmpIfNot, 0, u32::MAX)]),
        "V-JUMP",
    );
    verify(&body(vec![], vec![Instr::with_bc(Op::Jmp, 0, 1)])).unwrap();
}

#[test]
fn v_const() {
    rejects(
        &body(vec![I32], vec![Instr::with_bc(Op::LoadK, 0, 3)]),
        "V-CONST",
    );
    rejects(
        &body(vec![I32], vec![Instr::with_bc(Op::LoadK, 0, 1)]),
        "V-CONST",
    ); // string → int
    rejects(
        &body(vec![STR], vec![Instr::with_bc(Op::LoadK, 0, 0)]),
        "V-CONST",
    ); // bits → String
    rejects(
        &body(vec![Type::Stream], vec![Instr::with_bc(Op::LoadK, 0, 1)]),
        "V-CONST",
    );
    verify(&body(vec![STR, I32], vec![Instr::with_bc(Op::LoadK, 0, 1)])).unwrap();
}

#[test]
fn v_canon() {
    // K[2] = all ones: canonical for int32 (-1) and uint64, not for uint32 or boolean.
    verify(&body(vec![I32], vec![Instr::with_bc(Op::LoadK, 0, 2)])).unwrap();
    verify(&body(
        vec![Type::Scalar(Scalar::U64)],
        vec![Instr::with_bc(Op::LoadK, 0, 2)],
    ))
    .unwrap();
    rejects(
        &body(
            vec![Type::Scalar(Scalar::U32)],
            vec![Instr::with_bc(Op::LoadK, 0, 2)],
        ),
        "V-CANON",
    );
    rejects(
        &body(vec![BOOL], vec![Instr::with_bc(Op::LoadK, 0, 2)]),
        "V-CANON",
    );
    // loadi sign-extends: -1 is fine for int8, not for uint16; 2 is not a boolean.
    let minus_one = (-1i32) as u32;
    verify(&body(
        vec![Type::Scalar(Scalar::I8)],
        vec![Instr::with_bc(Op::LoadI, 0, minus_one)],
    ))
    .unwrap();
    rejects(
        &body(
            vec![Type::Scalar(Scalar::U16)],
            vec![Instr::with_bc(Op::LoadI, 0, minus_one)],
        ),
        "V-CANON",
    );
    rejects(
        &body(
            vec![Type::Scalar(Scalar::I8)],
            vec![Instr::with_bc(Op::LoadI, 0, 128)],
        ),
        "V-CANON",
    );
    rejects(
        &body(vec![BOOL], vec![Instr::with_bc(Op::LoadI, 0, 2)]),
        "V-CANON",
    );
    verify(&body(vec![BOOL], vec![Instr::with_bc(Op::LoadI, 0, 1)])).unwrap();
}

#[test]
fn v_func() {
    let m = sample_with(|m| {
        let f = &mut m.functions[F_KERNEL as usize];
        let call = f
            .code
            .iter()
            .position(|i| i.op == Op::Call)
            .expect("the kernel calls");
        f.code[call].c = 6;
    });
    rejects(&m, "V-FUNC");
}

#[test]
fn v_class() {
    rejects(
        &body(
            vec![Type::Object(0)],
            vec![Instr::with_bc(Op::NewObj, 0, 1)],
        ),
        "V-CLASS",
    );
    let mut m = body(
        vec![Type::Object(1)],
        vec![Instr::with_bc(Op::NewObj, 0, 0)],
    );
    m.classes.push(Class {
        name: "Q".into(),
        fields: vec![],
    });
    rejects(&m, "V-CLASS");
    verify(&body(
        vec![Type::Object(0)],
        vec![Instr::with_bc(Op::NewObj, 0, 0)],
    ))
    .unwrap();
}

#[test]
fn v_static() {
    rejects(
        &body(vec![I32], vec![i(Op::GetStatic, 0, 1, 0)]),
        "V-STATIC",
    );
    rejects(
        &body(vec![I64], vec![i(Op::GetStatic, 0, 0, 0)]),
        "V-STATIC",
    );
    rejects(
        &body(vec![I64], vec![i(Op::SetStatic, 0, 0, 0)]),
        "V-STATIC",
    );
    verify(&body(
        vec![I32],
        vec![i(Op::SetStatic, 0, 0, 0), i(Op::GetStatic, 0, 0, 0)],
    ))
    .unwrap();
}

#[test]
fn v_field() {
    let p = Type::Object(0);
    verify(&body(
        vec![F64, p],
        vec![i(Op::GetField, 0, 1, 0), i(Op::SetField, 1, 0, 0)],
    ))
    .unwrap();
    rejects(
        &body(vec![F64, p], vec![i(Op::GetField, 0, 1, 1)]),
        "V-FIELD",
    );
    rejects(
        &body(vec![F64, p], vec![i(Op::SetField, 1, 1, 0)]),
        "V-FIELD",
    );
    rejects(
        &body(vec![I32, p], vec![i(Op::GetField, 0, 1, 0)]),
        "V-FIELD",
    );
    rejects(
        &body(vec![I32, p], vec![i(Op::SetField, 1, 0, 0)]),
        "V-FIELD",
    );
}

#[test]
fn v_mathfn() {
    let f32 = Type::Scalar(Scalar::F32);
    rejects(
        &body(
            vec![f32],
            vec![i(Op::Math1F32, 0, 0, MathFn::ALL.len() as u16)],
        ),
        "V-MATHFN",
    );
    verify(&body(
        vec![F64],
        vec![i(Op::Math1F64, 0, 0, MathFn::Log10 as u16)],
    ))
    .unwrap();
}

/// `Main.main(int32 p)` with registers `regs` (r0 the parameter) and `code` then `retvoid`.
fn da(regs: Vec<Type>, mut code: Vec<Instr>) -> Module {
    code.push(Instr::new(Op::RetVoid, 0, 0, 0));
    let mut m = one_function(regs, None, code);
    m.functions[0].params = 1;
    m
}

fn jmp(op: Op, a: u16, to: u32) -> Instr {
    Instr::with_bc(op, a, to)
}

#[test]
fn v_def_reads_need_a_write_on_every_path() {
    // r0 int32 (parameter), r1 int32, r2 boolean.
    let regs = || vec![I32, I32, BOOL];
    let e = rejects(&da(regs(), vec![i(Op::AddI32, 0, 0, 1)]), "V-DEF");
    assert_eq!(e.pc, Some(0));
    assert!(e.message.contains("r1 is read"), "{e}");
    verify(&da(
        regs(),
        vec![i(Op::Mov, 1, 0, 0), i(Op::AddI32, 0, 0, 1)],
    ))
    .unwrap();
    // Written on one arm of an if only: 0 r2 := r0 < r0; 1 if !r2 goto 3; 2 r1 := r0; 3 read.
    let one_arm = vec![
        i(Op::LtI32, 2, 0, 0),
        jmp(Op::JmpIfNot, 2, 3),
        i(Op::Mov, 1, 0, 0),
        i(Op::AddI32, 0, 0, 1),
    ];
    assert_eq!(rejects(&da(regs(), one_arm.clone()), "V-DEF").pc, Some(3));
    // Both arms write it.
    let both = vec![
        i(Op::LtI32, 2, 0, 0),
        jmp(Op::JmpIfNot, 2, 4),
        i(Op::Mov, 1, 0, 0),
        jmp(Op::Jmp, 0, 5),
        Instr::with_bc(Op::LoadI, 1, 7),
        i(Op::AddI32, 0, 0, 1),
    ];
    verify(&da(regs(), both)).unwrap();
    // A loop whose body writes it after the header reads it: 0 r2 := r0 < r0;
    // 1 r0 := r0 + r1 (the first iteration reads r1 unwritten); 2 r1 := r0; 3 if r2 goto 1.
    let in_loop = vec![
        i(Op::LtI32, 2, 0, 0),
        i(Op::AddI32, 0, 0, 1),
        i(Op::Mov, 1, 0, 0),
        jmp(Op::JmpIf, 2, 1),
    ];
    assert_eq!(rejects(&da(regs(), in_loop), "V-DEF").pc, Some(1));
    // Code no path reaches is not checked: it cannot run.
    verify(&da(
        regs(),
        vec![jmp(Op::Jmp, 0, 2), i(Op::AddI32, 0, 0, 1)],
    ))
    .unwrap();
}

#[test]
fn v_def_instructions_that_read_their_destination() {
    let f64 = Type::F64;
    let fma = |code| da(vec![I32, f64, f64], code);
    rejects(&fma(vec![i(Op::FmaF64, 1, 2, 2)]), "V-DEF");
    let mut m = fma(vec![
        Instr::with_bc(Op::LoadK, 1, 0),
        i(Op::FmaF64, 2, 1, 1),
    ]);
    m.consts = vec![Const::Bits(0)];
    rejects(&m, "V-DEF");
    m.functions[0].code[1] = i(Op::FmaF64, 1, 1, 1);
    verify(&m).unwrap();
}

#[test]
fn v_def_a_call_frame_clobbers_the_callers_registers_from_its_argument_register() {
    // Main.main(int32 r0) calls `T.f(int32) -> int32` (3 registers) with its
    // argument in r2 and its result in r1; r3 and r4 lie inside the callee's frame.
    let callee = function(
        "T.f",
        FnKind::Host,
        1,
        Some(I32),
        vec![I32, I32, I32],
        vec![
            i(Op::AddI32, 1, 0, 0),
            i(Op::Mov, 2, 1, 0),
            i(Op::Ret, 2, 0, 0),
        ],
    );
    let caller = |after: Instr| {
        let mut m = da(
            vec![I32, I32, I32, I32, I32],
            vec![
                i(Op::Mov, 2, 0, 0),
                i(Op::Mov, 3, 0, 0),
                i(Op::Mov, 4, 0, 0),
                i(Op::Call, 1, 2, 1),
                after,
            ],
        );
        m.functions.push(callee.clone());
        m
    };
    // The result and the registers below the frame are the caller's.
    verify(&caller(i(Op::AddI32, 0, 0, 1))).unwrap();
    // The argument register, and the registers above it inside the callee's frame, are not.
    for r in [2, 3, 4] {
        let e = rejects(&caller(i(Op::AddI32, 0, 0, r)), "V-DEF");
        assert_eq!(e.pc, Some(4), "r{r}");
    }
    // Written again after the call: fine.
    let mut m = caller(i(Op::Mov, 3, 1, 0));
    m.functions[0].code.insert(5, i(Op::AddI32, 0, 0, 3));
    verify(&m).unwrap();
}

#[test]
fn v_def_refuses_functions_too_large_to_check() {
    // 65 535 registers and 5 000 blocks: beyond the check's memory budget.
    let mut code: Vec<Instr> = (1..=5000).map(|pc| jmp(Op::Jmp, 0, pc)).collect();
    code.push(Instr::new(Op::RetVoid, 0, 0, 0));
    let m = one_function(vec![I32; 65535], None, code);
    let e = rejects(&m, "V-DEF");
    assert!(e.message.contains("too large"), "{e}");
}

#[test]
fn v_mov() {
    rejects(&body(vec![I32, I64], vec![i(Op::Mov, 0, 1, 0)]), "V-MOV");
    rejects(
        &body(vec![Type::Object(0), STR], vec![i(Op::Mov, 0, 1, 0)]),
        "V-MOV",
    );
    verify(&body(vec![STR, STR], vec![i(Op::Mov, 0, 1, 0)])).unwrap();
}

#[test]
fn v_array() {
    let arr = |s| Type::Array(Elem::Scalar(s));
    let regs = vec![
        I32,
        arr(Scalar::I32),
        I64,
        arr(Scalar::U32),
        STR,
        Type::Array(Elem::Str),
    ];
    verify(&body(
        regs.clone(),
        vec![i(Op::ArrGetI32, 0, 1, 2), i(Op::ArrSetI32, 1, 2, 0)],
    ))
    .unwrap();
    rejects(
        &body(regs.clone(), vec![i(Op::ArrGetI32, 0, 3, 2)]),
        "V-ARRAY",
    );
    rejects(
        &body(regs.clone(), vec![i(Op::ArrSetI32, 3, 2, 0)]),
        "V-ARRAY",
    );
    verify(&body(
        regs.clone(),
        vec![i(Op::ArrGetRef, 4, 5, 2), i(Op::ArrSetRef, 5, 2, 4)],
    ))
    .unwrap();
    // A String out of an object array, an object into a String array.
    let mut regs2 = regs.clone();
    regs2.push(Type::Array(Elem::Object(0)));
    regs2.push(Type::Object(0));
    rejects(
        &body(regs2.clone(), vec![i(Op::ArrGetRef, 4, 6, 2)]),
        "V-ARRAY",
    );
    rejects(
        &body(regs2.clone(), vec![i(Op::ArrSetRef, 5, 2, 7)]),
        "V-ARRAY",
    );
    verify(&body(regs2, vec![i(Op::ArrGetRef, 7, 6, 2)])).unwrap();
}

#[test]
fn reference_element_arrays_hold_buffers_streams_events_and_arrays() {
    // r0 String[] (the register form of every non-class reference element), r1 int64.
    let holders = [
        Type::Buffer(Scalar::F32),
        Type::Stream,
        Type::Event,
        Type::Array(Elem::Scalar(Scalar::I32)),
    ];
    for t in holders {
        let regs = vec![Type::Array(Elem::Str), I64, t];
        verify(&body(
            regs,
            vec![i(Op::ArrGetRef, 2, 0, 1), i(Op::ArrSetRef, 0, 1, 2)],
        ))
        .unwrap();
    }
    // Objects keep their own arrays, shared arrays are never elements.
    for t in [Type::Object(0), Type::Shared(Scalar::I32)] {
        let regs = vec![Type::Array(Elem::Str), I64, t];
        rejects(&body(regs, vec![i(Op::ArrSetRef, 0, 1, 2)]), "V-ARRAY");
    }
    // A buffer is not an element of an object array.
    let regs = vec![Type::Array(Elem::Object(0)), I64, Type::Buffer(Scalar::F32)];
    rejects(&body(regs, vec![i(Op::ArrGetRef, 2, 0, 1)]), "V-ARRAY");
}

#[test]
fn v_aown() {
    // r0 Point[], r1 int64, r2 boolean, r3 Point, r4 int32[], r5 String[], r6 buffer.
    let regs = vec![
        Type::Array(Elem::Object(0)),
        I64,
        Type::BOOL,
        Type::Object(0),
        Type::Array(Elem::Scalar(Scalar::I32)),
        Type::Array(Elem::Str),
        Type::Buffer(Scalar::I32),
    ];
    verify(&body(
        regs.clone(),
        vec![
            i(Op::ArrOwnGet, 2, 0, 1),
            i(Op::ArrOwnSet, 0, 1, 2),
            i(Op::ArrOwnTake, 3, 0, 0),
            i(Op::ArrOwnTake, 6, 5, 0),
            i(Op::ArrOwnSet, 5, 1, 2),
        ],
    ))
    .unwrap();
    // Scalar arrays have no owns-flags.
    rejects(
        &body(regs.clone(), vec![i(Op::ArrOwnGet, 2, 4, 1)]),
        "V-AOWN",
    );
    rejects(
        &body(regs.clone(), vec![i(Op::ArrOwnSet, 4, 1, 2)]),
        "V-AOWN",
    );
    // The taken element must fit its register.
    rejects(
        &body(regs.clone(), vec![i(Op::ArrOwnTake, 6, 0, 0)]),
        "V-AOWN",
    );
    // The flag is a boolean (generic operand check).
    rejects(&body(regs, vec![i(Op::ArrOwnGet, 1, 0, 1)]), "V-OPTYPE");
    assert!(Op::ArrOwnGet.is_host_only() && Op::ArrOwnTake.is_host_only());
}

/// The sample module with the call `Demo.kernel → Demo.helper` (pc 0) replaced.
fn kernel_call(call: Instr, regs: Vec<Type>) -> Module {
    // Only the call (and the kernel's exit): the sample's device-op instances use other
    // registers than `regs`.
    sample_with(|m| {
        let f = &mut m.functions[F_KERNEL as usize];
        // The registers after the kernel's two parameters written first (V-DEF).
        f.code = Regs::with_params(regs.clone(), 2).prologue(K_ZERO);
        let exit = f.code.len() as u32 + 2;
        f.code.extend([
            call,
            Instr::with_bc(Op::Jmp, 0, exit),
            i(Op::RetVoid, 0, 0, 0),
        ]);
        f.lines.clear();
        f.regions.clear();
        f.locals.clear();
        f.shared.clear();
        f.regs = regs;
    })
}

#[test]
fn v_call() {
    let f32 = Type::Scalar(Scalar::F32);
    let base = vec![Type::Buffer(Scalar::F32), I32, f32];
    verify(&kernel_call(
        i(Op::Call, 2, 2, F_HELPER as u16),
        base.clone(),
    ))
    .unwrap();
    // Kind rules: a kernel cannot call host code or kernels; host code cannot call device code.
    let mut with_str = base.clone();
    with_str.push(STR);
    rejects(
        &kernel_call(i(Op::Call, 0, 3, F_LOG as u16), with_str),
        "V-CALL",
    );
    rejects(
        &kernel_call(i(Op::Call, 0, 2, F_KERNEL as u16), base.clone()),
        "V-CALL",
    );
    let m = sample_with(|m| {
        let f = &mut m.functions[F_ADD as usize];
        f.regs.push(f32);
        f.code.insert(0, i(Op::Call, 3, 3, F_HELPER as u16));
    });
    rejects(&m, "V-CALL");
    // The argument window must fit the frame: b + params <= regs.len().
    rejects(
        &kernel_call(i(Op::Call, 2, 3, F_HELPER as u16), base.clone()),
        "V-CALL",
    );
    // Argument type.
    rejects(
        &kernel_call(i(Op::Call, 2, 1, F_HELPER as u16), base.clone()),
        "V-CALL",
    );
    // Result type, and void callees need a == 0.
    let mut regs = base.clone();
    regs.push(I32);
    rejects(
        &kernel_call(i(Op::Call, 3, 2, F_HELPER as u16), regs),
        "V-CALL",
    );
    let m = sample_with(|m| {
        let f = &mut m.functions[F_EVERYTHING as usize];
        let call = f
            .code
            .iter_mut()
            .find(|i| i.op == Op::Call && i.c == F_LOG as u16)
            .unwrap();
        call.a = 1;
    });
    rejects(&m, "V-CALL");
    // A parameterless callee may start its frame just past the caller's.
    let m = sample_with(|m| {
        let f = &mut m.functions[F_ADD as usize];
        let n = f.regs.len() as u16;
        f.code.insert(0, i(Op::Call, 0, n, F_CLINIT as u16));
    });
    verify(&m).unwrap();
    let m = sample_with(|m| {
        let f = &mut m.functions[F_ADD as usize];
        let n = f.regs.len() as u16;
        f.code.insert(0, i(Op::Call, 0, n + 1, F_CLINIT as u16));
    });
    rejects(&m, "V-CALL");
}

#[test]
fn v_ret() {
    // ret in a void function, retvoid in a non-void one.
    rejects(&body(vec![I32], vec![i(Op::Ret, 0, 0, 0)]), "V-RET");
    let mut m = params_only(one_function(
        vec![I32],
        Some(I32),
        vec![i(Op::RetVoid, 0, 0, 0)],
    ));
    rejects(&m, "V-RET");
    m.functions[0].code[0] = i(Op::Ret, 0, 0, 0);
    verify(&m).unwrap();
    // Wrong returned type.
    let m = params_only(one_function(
        vec![I64],
        Some(I32),
        vec![i(Op::Ret, 0, 0, 0)],
    ));
    rejects(&m, "V-RET");
    // retown needs a reference result.
    let m = params_only(one_function(
        vec![I32, BOOL],
        Some(I32),
        vec![i(Op::RetOwn, 0, 1, 0)],
    ));
    rejects(&m, "V-RET");
    let m = params_only(one_function(
        vec![STR, BOOL],
        None,
        vec![i(Op::RetOwn, 0, 1, 0)],
    ));
    rejects(&m, "V-RET");
    let m = params_only(one_function(
        vec![STR, BOOL],
        Some(STR),
        vec![i(Op::RetOwn, 0, 1, 0)],
    ));
    verify(&m).unwrap();
    let m = params_only(one_function(
        vec![STR, I32],
        Some(STR),
        vec![i(Op::RetOwn, 0, 1, 0)],
    ));
    rejects(&m, "V-OPTYPE");
}

// ---- tables ----

#[test]
fn v_lines() {
    let m = sample_with(|m| m.functions[0].lines.swap(0, 1));
    rejects(&m, "V-LINES");
    let m = sample_with(|m| {
        let n = m.functions[1].code.len() as u32;
        m.functions[1].lines = vec![LineEntry {
            pc: n,
            line: 1,
            col: 1,
        }];
    });
    rejects(&m, "V-LINES");
}

#[test]
fn v_region() {
    let region = |kind, header, merge, cont| Region {
        kind,
        header,
        merge,
        cont,
    };
    use RegionKind::{If, Loop};
    let with = |regions: Vec<Region>| sample_with(|m| m.functions[0].regions = regions);
    let n = sample_module().functions[0].code.len() as u32;
    verify(&with(vec![region(Loop, 0, n, n), region(If, 0, 1, 0)])).unwrap();
    // Loop order header <= cont <= merge <= len.
    rejects(&with(vec![region(Loop, 3, 5, 2)]), "V-REGION");
    rejects(&with(vec![region(Loop, 3, 5, 6)]), "V-REGION");
    rejects(&with(vec![region(Loop, 3, n + 1, 4)]), "V-REGION");
    // If: header < merge <= len, cont 0.
    rejects(&with(vec![region(If, 3, 3, 0)]), "V-REGION");
    rejects(&with(vec![region(If, 3, n + 1, 0)]), "V-REGION");
    rejects(&with(vec![region(If, 3, 5, 4)]), "V-REGION");
    // Any order is accepted (the compiler lists inner regions first); nesting is what counts.
    verify(&with(vec![region(If, 5, 6, 0), region(If, 3, 4, 0)])).unwrap();
    verify(&with(vec![
        region(If, 2, 3, 0),
        region(Loop, 1, 5, 4),
        region(If, 2, 4, 0),
    ]))
    .unwrap();
    rejects(
        &with(vec![region(If, 3, 7, 0), region(Loop, 1, 5, 2)]),
        "V-REGION",
    );
    // Overlapping without nesting.
    rejects(
        &with(vec![region(Loop, 1, 5, 2), region(If, 3, 7, 0)]),
        "V-REGION",
    );
    verify(&with(vec![
        region(Loop, 1, 5, 2),
        region(If, 3, 5, 0),
        region(If, 5, 7, 0),
    ]))
    .unwrap();
}

#[test]
fn v_inline() {
    let call = |start, end, callee| InlinedCall {
        start,
        end,
        callee,
        line: 3,
        col: 9,
    };
    let with = |calls: Vec<InlinedCall>| {
        sample_with(|m| {
            m.functions[0].inlined = calls;
        })
    };
    let n = sample_module().functions[0].code.len() as u32;
    let last = sample_module().functions.len() as u32 - 1;
    verify(&with(vec![call(0, n, last), call(2, 4, 0), call(4, 4, 0)])).unwrap();
    rejects(&with(vec![call(3, 2, 0)]), "V-INLINE");
    rejects(&with(vec![call(0, n + 1, 0)]), "V-INLINE");
    rejects(&with(vec![call(0, 1, last + 1)]), "V-INLINE");
    // Overlapping without nesting.
    rejects(&with(vec![call(1, 5, 0), call(3, 7, 0)]), "V-INLINE");
}

#[test]
fn v_local() {
    let m = sample_with(|m| {
        let n = m.functions[1].regs.len() as u16;
        m.functions[1].locals = vec![LocalName {
            reg: n,
            name: "x".into(),
        }];
    });
    rejects(&m, "V-LOCAL");
}

#[test]
fn every_opcode_has_a_rejected_operand_mutation() {
    // For every opcode, a valid instance is accepted, and setting a register operand past the
    // frame is rejected: no opcode escapes V-REG.
    for &op in Op::ALL {
        let mut regs = Regs::new(&[I32]);
        let Some(instr) = valid_instr(op, &mut regs, 0) else {
            continue;
        };
        let has_reg = op.operands().iter().enumerate().any(|(slot, o)| {
            matches!(o, opcodes::Operand::Dst(_) | opcodes::Operand::Src(_)) && slot < 3
        });
        if !has_reg {
            continue;
        }
        // Demo.everything reduced to this instruction and a `ret`.
        let ret = regs.of(STR);
        let mut m = sample_module();
        let f = &mut m.functions[0];
        f.params = regs.types.len() as u16;
        f.regs = regs.types;
        f.code = vec![instr, i(Op::Ret, ret, 0, 0)];
        f.lines.clear();
        f.regions.clear();
        f.locals.clear();
        assert!(verify(&m).is_ok(), "`{}`: {:?}", op.mnemonic(), verify(&m));
        let nregs = m.functions[0].regs.len() as u16;
        let [a, b, c] = op.operands();
        let mut bad = m.functions[0].code[0];
        if matches!(a, opcodes::Operand::Dst(_) | opcodes::Operand::Src(_)) {
            bad.a = nregs;
        } else if matches!(b, opcodes::Operand::Dst(_) | opcodes::Operand::Src(_)) {
            bad.b = nregs;
        } else {
            assert!(matches!(
                c,
                opcodes::Operand::Dst(_) | opcodes::Operand::Src(_)
            ));
            bad.c = nregs;
        }
        m.functions[0].code[0] = bad;
        rejects(&m, "V-REG");
    }
}

#[test]
fn v_devmem_compare_exchange_desired_register() {
    // atom.cas.i32 r1 r0 r3: expected in r1, desired in r2, buffer r0, index r3.
    let cas = |desired: Type| {
        sample_with(|m| {
            let f = &mut m.functions[F_KERNEL as usize];
            f.params = 0;
            f.regs = vec![Type::Buffer(Scalar::I32), I32, desired, I64];
            f.code = Regs::with_params(f.regs.clone(), 0).prologue(K_ZERO);
            let exit = f.code.len() as u32 + 2;
            f.code.extend([
                i(Op::AtomicCasI32, 1, 0, 3),
                Instr::with_bc(Op::Jmp, 0, exit),
                i(Op::RetVoid, 0, 0, 0),
            ]);
            f.lines.clear();
            f.regions.clear();
            f.locals.clear();
            f.shared.clear();
        })
    };
    verify(&cas(I32)).unwrap();
    rejects(&cas(Type::Scalar(Scalar::U32)), "V-DEVMEM");
}

/// The sample kernel with `code` before a `retvoid`.
fn kernel_code(code: Vec<Instr>) -> Module {
    sample_with(|m| {
        let f = &mut m.functions[F_KERNEL as usize];
        f.code = code;
        f.code.push(i(Op::RetVoid, 0, 0, 0));
        f.lines.clear();
        f.regions.clear();
        f.locals.clear();
        f.shared.clear();
    })
}

#[test]
fn v_kattr() {
    let wave = |n| i(Op::KernelAttr, 0, KernelAttrs::WAVE_WIDTH, n);
    let m = kernel_code(vec![
        wave(16),
        i(Op::KernelAttr, 0, KernelAttrs::MAX_THREADS, 64),
        i(Op::KernelAttr, 0, KernelAttrs::FAST_MATH, 1),
    ]);
    verify(&m).unwrap();
    let attrs = KernelAttrs::of(&m.functions[F_KERNEL as usize]);
    assert_eq!(
        attrs,
        KernelAttrs {
            wave_width: Some(16),
            max_threads: Some(64),
            fast_math: true
        }
    );
    // Widths that are not powers of two 1..64, unknown attributes, bad values.
    for bad in [0, 3, 128] {
        rejects(&kernel_code(vec![wave(bad)]), "V-KATTR");
    }
    rejects(
        &kernel_code(vec![i(Op::KernelAttr, 0, KernelAttrs::MAX_THREADS, 0)]),
        "V-KATTR",
    );
    rejects(
        &kernel_code(vec![i(Op::KernelAttr, 0, KernelAttrs::FAST_MATH, 2)]),
        "V-KATTR",
    );
    rejects(&kernel_code(vec![i(Op::KernelAttr, 0, 9, 1)]), "V-KATTR");
    // Only leading instructions of a kernel.
    rejects(
        &kernel_code(vec![i(Op::WaveBarrier, 0, 0, 0), wave(8)]),
        "V-KATTR",
    );
    rejects(
        &sample_with(|m| {
            let f = &mut m.functions[F_HELPER as usize];
            f.code.insert(0, wave(8));
            f.lines.clear();
            f.regions.clear();
        }),
        "V-KATTR",
    );
}

#[test]
fn v_fence() {
    verify(&kernel_code(vec![
        i(Op::Fence, 0, 0, 0),
        i(Op::Fence, 0, 1, 0),
    ]))
    .unwrap();
    rejects(&kernel_code(vec![i(Op::Fence, 0, 2, 0)]), "V-FENCE");
}

#[test]
fn v_devquery() {
    let q = |a, sel| i(Op::DeviceQuery, a, sel, 0);
    // r0 int32, r1 int64, r2 boolean.
    let regs = vec![I32, Type::I64, BOOL];
    verify(&body(
        regs.clone(),
        vec![q(0, 0), q(1, 1), q(0, 2), q(2, 3), q(1, 4), q(0, 5)],
    ))
    .unwrap();
    rejects(&body(regs.clone(), vec![q(1, 0)]), "V-DEVQUERY");
    rejects(&body(regs.clone(), vec![q(0, 3)]), "V-DEVQUERY");
    rejects(&body(regs, vec![q(0, 6)]), "V-DEVQUERY");
}

#[test]
fn v_shared_dynamic_at_most_one() {
    let dynamic = SharedDecl {
        elem: Scalar::F32,
        len: 0,
    };
    // One dynamic declaration beside a static one verifies.
    let one = sample_with(|m| m.functions[F_KERNEL as usize].shared.push(dynamic));
    verify(&one).unwrap();
    let two = sample_with(|m| {
        let f = &mut m.functions[F_KERNEL as usize];
        f.shared.push(dynamic);
        f.shared.push(dynamic);
    });
    rejects(&two, "V-SHARED");
}

#[test]
fn v_shared_only_kernels_declare_numeric_shared_arrays() {
    let decl = |elem| SharedDecl { elem, len: 8 };
    for f in [F_EVERYTHING, F_HELPER] {
        let m = sample_with(|m| m.functions[f as usize].shared.push(decl(Scalar::F32)));
        let e = rejects(&m, "V-SHARED");
        assert!(
            e.message.contains("function has shared declarations"),
            "{e}"
        );
    }
    for elem in [Scalar::Bool, Scalar::Char] {
        let m = sample_with(|m| m.functions[F_KERNEL as usize].shared.push(decl(elem)));
        rejects(&m, "V-SHARED");
    }
    let m = sample_with(|m| {
        m.functions[F_KERNEL as usize]
            .shared
            .push(decl(Scalar::U16))
    });
    verify(&m).unwrap();
}
