//! Helpers for building bytecode modules by hand in the VM's integration tests.
#![allow(dead_code)]

use std::sync::Arc;

use cajeta_bytecode::{
    Class, Const, Field, FnKind, Function, Instr, LineEntry, Module, Op, Scalar, Static, Type,
};
use cajeta_vm::{run_program_in, Capture, RuntimeError, Value, Vm};

pub mod fake;

/// `Instr::new`.
pub fn i(op: Op, a: u16, b: u16, c: u16) -> Instr {
    Instr::new(op, a, b, c)
}

/// `Instr::with_bc`.
pub fn ibc(op: Op, a: u16, bc: u32) -> Instr {
    Instr::with_bc(op, a, bc)
}

/// Assembles `;`- or newline-separated instructions `mnemonic a b c` (missing operands are 0;
/// an opcode whose `b` slot is a 32-bit operand takes `mnemonic a bc`; negative numbers are
/// 16- or 32-bit two's complement). `#` starts a comment.
pub fn asm(src: &str) -> Vec<Instr> {
    use cajeta_bytecode::Operand;
    src.split(['\n', ';'])
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut words = l.split_whitespace();
            let o = op(words.next().unwrap_or_default());
            let n: Vec<i64> = words
                .map(|w| {
                    w.parse()
                        .unwrap_or_else(|_| panic!("bad operand {w} in `{l}`"))
                })
                .collect();
            let at = |k: usize| n.get(k).copied().unwrap_or(0);
            let wide = matches!(
                o.operands()[1],
                Operand::Imm32 | Operand::Const | Operand::Target | Operand::Class
            );
            if wide {
                ibc(o, at(0) as u16, at(1) as u32)
            } else {
                i(o, at(0) as u16, at(1) as u16, at(2) as u16)
            }
        })
        .collect()
}

/// The opcode with this mnemonic (from the opcode table).
pub fn op(mnemonic: &str) -> Op {
    *Op::ALL
        .iter()
        .find(|o| o.mnemonic() == mnemonic)
        .unwrap_or_else(|| panic!("no opcode {mnemonic}"))
}

/// A host function; every instruction gets line = pc + 1, col = 1 unless `lines` is set later.
pub fn func(
    name: &str,
    params: u16,
    ret: Option<Type>,
    regs: Vec<Type>,
    code: Vec<Instr>,
) -> Function {
    let lines = (0..code.len() as u32)
        .map(|pc| LineEntry {
            pc,
            line: pc + 1,
            col: 1,
        })
        .collect();
    Function {
        name: name.to_string(),
        kind: FnKind::Host,
        params,
        ret,
        regs,
        code,
        file: 0,
        lines,
        regions: vec![],
        locals: vec![],
        shared: vec![],
        inlined: vec![],
    }
}

/// A module of the given functions with source file `src/demo/Main.cajeta`.
pub fn module(functions: Vec<Function>) -> Module {
    Module {
        files: vec!["src/demo/Main.cajeta".into()],
        functions,
        ..Default::default()
    }
}

/// Adds a constant and returns its index.
pub fn konst(m: &mut Module, k: Const) -> u32 {
    m.consts.push(k);
    (m.consts.len() - 1) as u32
}

/// Adds a class and returns its index.
pub fn class(m: &mut Module, name: &str, fields: &[(&str, Type)]) -> u32 {
    m.classes.push(Class {
        name: name.to_string(),
        fields: fields
            .iter()
            .map(|(n, t)| Field {
                name: n.to_string(),
                ty: *t,
            })
            .collect(),
    });
    (m.classes.len() - 1) as u32
}

/// Adds a static and returns its index.
pub fn stat(m: &mut Module, name: &str, ty: Type) -> u16 {
    m.statics.push(Static {
        name: name.to_string(),
        ty,
    });
    (m.statics.len() - 1) as u16
}

/// Asserts that `m` passes the bytecode verifier (the VM's precondition), so the tests only
/// exercise modules a real pipeline could produce.
pub fn verified(m: Module) -> Module {
    if let Err(e) = cajeta_bytecode::verify(&m) {
        panic!(
            "test module fails verification: {e} (function {:?}, pc {:?})",
            e.function, e.pc
        );
    }
    m
}

/// A VM (stdout/stderr output) for a verified copy of `m`.
pub fn new_vm(m: Module) -> Vm {
    Vm::new(Arc::new(verified(m)))
}

/// A VM with captured output.
pub fn vm(m: Module) -> (Vm, Capture, Capture) {
    let m = verified(m);
    let out = Capture::new();
    let err = Capture::new();
    let vm = Vm::with_output(Arc::new(m), out.sink(), err.sink());
    (vm, out, err)
}

/// Calls function `f` of `m` with `args` on a fresh VM with captured output.
pub fn call(
    m: Module,
    f: u32,
    args: &[Value],
) -> (Result<Option<Value>, RuntimeError>, String, String) {
    let (mut vm, out, err) = vm(m);
    let r = vm.call_index(f, args);
    vm.flush();
    (r, out.text(), err.text())
}

/// Runs `m` as a program from `entry` with captured output: (status, stdout, stderr).
pub fn run(m: Module, entry: u32, args: &[&str]) -> (i32, String, String) {
    let (mut vm, out, err) = vm(m);
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let status = run_program_in(&mut vm, entry, &args);
    vm.flush();
    (status, out.text(), err.text())
}

/// Shorthand scalar types.
pub const BOOL: Type = Type::Scalar(Scalar::Bool);
pub const CHAR: Type = Type::Scalar(Scalar::Char);
pub const I8: Type = Type::Scalar(Scalar::I8);
pub const U8: Type = Type::Scalar(Scalar::U8);
pub const I16: Type = Type::Scalar(Scalar::I16);
pub const U16: Type = Type::Scalar(Scalar::U16);
pub const I32: Type = Type::Scalar(Scalar::I32);
pub const U32: Type = Type::Scalar(Scalar::U32);
pub const I64: Type = Type::Scalar(Scalar::I64);
pub const U64: Type = Type::Scalar(Scalar::U64);
pub const F32: Type = Type::Scalar(Scalar::F32);
pub const F64: Type = Type::Scalar(Scalar::F64);
pub const STR: Type = Type::Str;
