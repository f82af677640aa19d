//! Host benchmarks of the interpreter on hand-assembled modules (the shapes a compiler emits
//! for /work/shared/bench/SPEC.md's `fib`, `loop`, `mandelbrot` and `spectral`).
//!
//! `cargo bench -p cajeta-vm --bench host -- [fib N] [loop N] [mandelbrot N] [spectral N] [nbody N]`
//! (no arguments: all four at reduced sizes). Each prints its checksum (checked against the
//! SPEC value where one is known) and the wall time of the call.

// The nbody literals are copied verbatim from SPEC.md.
#![allow(clippy::excessive_precision)]

use std::sync::Arc;
use std::time::Instant;

use cajeta_bytecode::{Const, Elem, FnKind, Function, Instr, Module, Op, Scalar, Type};
use cajeta_vm::{Value, Vm};

const I64: Type = Type::I64;
const F64: Type = Type::F64;
const BOOL: Type = Type::BOOL;

fn i(op: Op, a: u16, b: u16, c: u16) -> Instr {
    Instr::new(op, a, b, c)
}

fn ibc(op: Op, a: u16, bc: u32) -> Instr {
    Instr::with_bc(op, a, bc)
}

fn func(name: &str, params: u16, ret: Option<Type>, regs: Vec<Type>, code: Vec<Instr>) -> Function {
    Function {
        name: name.into(),
        kind: FnKind::Host,
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

/// `int64 fib(int64 n) { if (n < 2) return n; return fib(n - 1) + fib(n - 2); }`
fn fib_module() -> Module {
    let f = func(
        "Bench.fib",
        1,
        Some(I64),
        vec![I64, BOOL, I64, I64, I64],
        vec![
            ibc(Op::LoadI, 2, 2),
            i(Op::LtI64, 1, 0, 2),
            ibc(Op::JmpIfNot, 1, 4),
            i(Op::Ret, 0, 0, 0),
            i(Op::AddImmI64, 3, 0, (-1i16) as u16),
            i(Op::Call, 3, 3, 0),
            i(Op::AddImmI64, 4, 0, (-2i16) as u16),
            i(Op::Call, 4, 4, 0),
            i(Op::AddI64, 3, 3, 4),
            i(Op::Ret, 3, 0, 0),
        ],
    );
    Module {
        files: vec!["Bench.cajeta".into()],
        functions: vec![f],
        ..Default::default()
    }
}

/// `s = 0; for (i = 0; i < n; i++) for (j = 0; j < n; j++) s += (i * j) % 7;` with the
/// condition tested at the top of each loop, as a straightforward compiler emits it.
fn loop_module() -> Module {
    // r0 n, r1 s, r2 i, r3 j, r4 cond, r5 t, r6 seven
    let f = func(
        "Bench.loop",
        1,
        Some(I64),
        vec![I64, I64, I64, I64, BOOL, I64, I64],
        vec![
            ibc(Op::LoadI, 1, 0),
            ibc(Op::LoadI, 2, 0),
            i(Op::LtI64, 4, 2, 0), // 2: outer test
            ibc(Op::JmpIfNot, 4, 15),
            ibc(Op::LoadI, 3, 0),
            i(Op::LtI64, 4, 3, 0), // 5: inner test
            ibc(Op::JmpIfNot, 4, 13),
            i(Op::MulI64, 5, 2, 3),
            ibc(Op::LoadI, 6, 7),
            i(Op::RemI64, 5, 5, 6),
            i(Op::AddI64, 1, 1, 5),
            i(Op::AddImmI64, 3, 3, 1),
            ibc(Op::Jmp, 0, 5),
            i(Op::AddImmI64, 2, 2, 1), // 13
            ibc(Op::Jmp, 0, 2),
            i(Op::Ret, 1, 0, 0), // 15
        ],
    );
    Module {
        files: vec!["Bench.cajeta".into()],
        functions: vec![f],
        ..Default::default()
    }
}

/// SPEC mandelbrot as a straightforward compiler emits it (every literal loaded where it is
/// used, `if (…) break;` as a branch around a jump): returns total * 2^32 + inside.
fn mandelbrot_module() -> Module {
    let mut consts = vec![];
    let mut k = |v: f64| {
        consts.push(Const::Bits(v.to_bits()));
        (consts.len() - 1) as u32
    };
    // r0 n, r1 total, r2 inside, r3 py, r4 px, r5 k, r6 cond, r7 ci, r8 cr, r9 zr, r10 zi,
    // r11 zr2, r12 zi2, r13 r14 float temps, r15 int temp
    let regs = vec![
        I64, I64, I64, I64, I64, I64, BOOL, F64, F64, F64, F64, F64, F64, F64, F64, I64,
    ];
    let mut a = Asm::default();
    a.bc(Op::LoadI, 1, 0);
    a.bc(Op::LoadI, 2, 0);
    a.bc(Op::LoadI, 3, 0);
    a.label("py");
    a.i(Op::LtI64, 6, 3, 0);
    a.br(Op::JmpIfNot, 6, "end");
    for (coord, dst, off) in [(3u16, 7u16, 1.25), (4, 8, 2.0)] {
        if coord == 4 {
            a.bc(Op::LoadI, 4, 0);
            a.label("px");
            a.i(Op::LtI64, 6, 4, 0);
            a.br(Op::JmpIfNot, 6, "py_next");
        }
        a.i(Op::SToF64, 13, coord, 0);
        a.bc(Op::LoadK, 14, k(2.5));
        a.i(Op::MulF64, 13, 13, 14);
        a.i(Op::SToF64, 14, 0, 0);
        a.i(Op::DivF64, 13, 13, 14);
        a.bc(Op::LoadK, 14, k(off));
        a.i(Op::SubF64, dst, 13, 14);
    }
    a.bc(Op::LoadK, 9, k(0.0));
    a.bc(Op::LoadK, 10, k(0.0));
    a.bc(Op::LoadI, 5, 0);
    a.label("k");
    a.bc(Op::LoadI, 15, 50);
    a.i(Op::LtI64, 6, 5, 15);
    a.br(Op::JmpIfNot, 6, "k_end");
    a.i(Op::MulF64, 11, 9, 9);
    a.i(Op::MulF64, 12, 10, 10);
    a.i(Op::AddF64, 13, 11, 12);
    a.bc(Op::LoadK, 14, k(4.0));
    a.i(Op::LtF64, 6, 14, 13); // zr2 + zi2 > 4.0
    a.br(Op::JmpIfNot, 6, "no_break");
    a.br(Op::Jmp, 0, "k_end");
    a.label("no_break");
    a.bc(Op::LoadK, 13, k(2.0));
    a.i(Op::MulF64, 13, 13, 9);
    a.i(Op::MulF64, 13, 13, 10);
    a.i(Op::AddF64, 10, 13, 7);
    a.i(Op::SubF64, 13, 11, 12);
    a.i(Op::AddF64, 9, 13, 8);
    a.i(Op::AddImmI64, 5, 5, 1);
    a.br(Op::Jmp, 0, "k");
    a.label("k_end");
    a.i(Op::AddI64, 1, 1, 5);
    a.bc(Op::LoadI, 15, 50);
    a.i(Op::EqI64, 6, 5, 15);
    a.br(Op::JmpIfNot, 6, "px_next");
    a.i(Op::AddImmI64, 2, 2, 1);
    a.label("px_next");
    a.i(Op::AddImmI64, 4, 4, 1);
    a.br(Op::Jmp, 0, "px");
    a.label("py_next");
    a.i(Op::AddImmI64, 3, 3, 1);
    a.br(Op::Jmp, 0, "py");
    a.label("end");
    a.bc(Op::LoadI, 15, 32);
    a.i(Op::ShlI64, 1, 1, 15);
    a.i(Op::OrI64, 1, 1, 2);
    a.i(Op::Ret, 1, 0, 0);
    let f = func("Bench.mandelbrot", 1, Some(I64), regs, a.finish());
    Module {
        files: vec!["Bench.cajeta".into()],
        consts,
        functions: vec![f],
        ..Default::default()
    }
}

/// SPEC spectral norm with float64 arrays; `mulAv`/`mulAtv` are functions with `A` inlined,
/// literals loaded where they are used.
fn spectral_module() -> Module {
    let arr = Type::Array(Elem::Scalar(Scalar::F64));
    let consts = vec![Const::Bits(1.0f64.to_bits()), Const::Bits(0.0f64.to_bits())];
    // mul(n, v, out): out[i] = sum_j A(i,j) * v[j] (or A(j,i) when transposed)
    // r0 n, r1 v, r2 out, r3 i, r4 j, r5 cond, r6 s, r7 ij, r8 t, r9 den, r10 a, r11 one,
    // r12 vj, r13 two
    let mul = |name: &str, transposed: bool| {
        let idx = if transposed { 4 } else { 3 }; // + i + 1 (A(i,j)) or + j + 1 (A(j,i))
        let mut a = Asm::default();
        a.bc(Op::LoadI, 3, 0);
        a.label("i");
        a.i(Op::LtI64, 5, 3, 0);
        a.br(Op::JmpIfNot, 5, "end");
        a.bc(Op::LoadK, 6, 1);
        a.bc(Op::LoadI, 4, 0);
        a.label("j");
        a.i(Op::LtI64, 5, 4, 0);
        a.br(Op::JmpIfNot, 5, "jend");
        a.i(Op::AddI64, 7, 3, 4);
        a.i(Op::AddImmI64, 8, 7, 1);
        a.i(Op::MulI64, 9, 7, 8);
        a.bc(Op::LoadI, 13, 2);
        a.i(Op::DivI64, 9, 9, 13);
        a.i(Op::AddI64, 9, 9, idx);
        a.i(Op::AddImmI64, 9, 9, 1);
        a.i(Op::SToF64, 10, 9, 0);
        a.bc(Op::LoadK, 11, 0);
        a.i(Op::DivF64, 10, 11, 10);
        a.i(Op::ArrGetF64, 12, 1, 4);
        a.i(Op::MulF64, 10, 10, 12);
        a.i(Op::AddF64, 6, 6, 10);
        a.i(Op::AddImmI64, 4, 4, 1);
        a.br(Op::Jmp, 0, "j");
        a.label("jend");
        a.i(Op::ArrSetF64, 2, 3, 6);
        a.i(Op::AddImmI64, 3, 3, 1);
        a.br(Op::Jmp, 0, "i");
        a.label("end");
        a.i(Op::RetVoid, 0, 0, 0);
        func(
            name,
            3,
            None,
            vec![
                I64, arr, arr, I64, I64, BOOL, F64, I64, I64, I64, F64, F64, F64, I64,
            ],
            a.finish(),
        )
    };
    let mul_av = mul("Bench.mulAv", false);
    let mul_atv = mul("Bench.mulAtv", true);
    // main(n): u = 1s, v, tmp; 10 x (mulAtAv(u) -> v, mulAtAv(v) -> u); sqrt(vBv / vv)
    // r0 n, r1 u, r2 v, r3 tmp, r4 i, r5 cond, r6 one, r7 rep, r8 (unused), r9 vbv, r10 vv,
    // r11 x, r12 y, r13.. call window (n, v, out)
    let mut a = Asm::default();
    a.i(Op::NewArr, 1, 0, 0);
    a.i(Op::NewArr, 2, 0, 0);
    a.i(Op::NewArr, 3, 0, 0);
    a.bc(Op::LoadI, 4, 0);
    a.label("fill");
    a.i(Op::LtI64, 5, 4, 0);
    a.br(Op::JmpIfNot, 5, "filled");
    a.bc(Op::LoadK, 6, 0);
    a.i(Op::ArrSetF64, 1, 4, 6);
    a.i(Op::AddImmI64, 4, 4, 1);
    a.br(Op::Jmp, 0, "fill");
    a.label("filled");
    a.bc(Op::LoadI, 7, 0);
    a.label("rep");
    a.bc(Op::LoadI, 8, 10);
    a.i(Op::LtI64, 5, 7, 8);
    a.br(Op::JmpIfNot, 5, "done");
    // mulAv(n, u, tmp); mulAtv(n, tmp, v); mulAv(n, v, tmp); mulAtv(n, tmp, u)
    for (f, src, dst) in [(0u16, 1u16, 3u16), (1, 3, 2), (0, 2, 3), (1, 3, 1)] {
        a.i(Op::Mov, 13, 0, 0);
        a.i(Op::Mov, 14, src, 0);
        a.i(Op::Mov, 15, dst, 0);
        a.i(Op::Call, 0, 13, f);
    }
    a.i(Op::AddImmI64, 7, 7, 1);
    a.br(Op::Jmp, 0, "rep");
    a.label("done");
    a.bc(Op::LoadK, 9, 1);
    a.bc(Op::LoadK, 10, 1);
    a.bc(Op::LoadI, 4, 0);
    a.label("dot");
    a.i(Op::LtI64, 5, 4, 0);
    a.br(Op::JmpIfNot, 5, "end");
    a.i(Op::ArrGetF64, 11, 1, 4);
    a.i(Op::ArrGetF64, 12, 2, 4);
    a.i(Op::MulF64, 11, 11, 12);
    a.i(Op::AddF64, 9, 9, 11);
    a.i(Op::MulF64, 12, 12, 12);
    a.i(Op::AddF64, 10, 10, 12);
    a.i(Op::AddImmI64, 4, 4, 1);
    a.br(Op::Jmp, 0, "dot");
    a.label("end");
    a.i(Op::DivF64, 9, 9, 10);
    a.i(Op::Math1F64, 9, 9, 0);
    a.i(Op::Ret, 9, 0, 0);
    let main = func(
        "Bench.spectral",
        1,
        Some(F64),
        vec![
            I64, arr, arr, arr, I64, BOOL, F64, I64, I64, F64, F64, F64, F64, I64, arr, arr,
        ],
        a.finish(),
    );
    Module {
        files: vec!["Bench.cajeta".into()],
        consts,
        functions: vec![mul_av, mul_atv, main],
        ..Default::default()
    }
}

/// A tiny assembler with labels, for the longer benchmarks.
#[derive(Default)]
struct Asm {
    code: Vec<Instr>,
    labels: std::collections::HashMap<&'static str, u32>,
    fixups: Vec<(usize, &'static str)>,
}

impl Asm {
    fn i(&mut self, op: Op, a: u16, b: u16, c: u16) {
        self.code.push(Instr::new(op, a, b, c));
    }
    fn bc(&mut self, op: Op, a: u16, bc: u32) {
        self.code.push(Instr::with_bc(op, a, bc));
    }
    /// A branch (`jmp`, `jmpif`, `jmpifnot`) to `label`.
    fn br(&mut self, op: Op, a: u16, label: &'static str) {
        self.fixups.push((self.code.len(), label));
        self.code.push(Instr::with_bc(op, a, 0));
    }
    fn label(&mut self, name: &'static str) {
        self.labels.insert(name, self.code.len() as u32);
    }
    fn finish(mut self) -> Vec<Instr> {
        for (at, label) in std::mem::take(&mut self.fixups) {
            self.code[at].set_bc(self.labels[label]);
        }
        self.code
    }
}

/// SPEC nbody with a `Body` class (fields x y z vx vy vz mass) in a `Body[]`; fields are read
/// from the objects as the SPEC's pseudo-code is written (no caching in locals). Prints
/// `e0 e1` with `fmt.fixed 9` and returns e1.
fn nbody_module() -> Module {
    use cajeta_bytecode::{Class, Field};
    let mut consts: Vec<Const> = vec![];
    let mut k = |v: f64| {
        consts.push(Const::Bits(v.to_bits()));
        (consts.len() - 1) as u32
    };
    let body = Type::Object(0);
    let bodies_ty = Type::Array(Elem::Object(0));
    let sqrt = cajeta_bytecode::MathFn::Sqrt as u16;
    let (x, y, z, vx, vy, vz, mass) = (0u16, 1u16, 2u16, 3u16, 4u16, 5u16, 6u16);

    // advance(bodies, dt): r0 bodies, r1 dt, r2 n, r3 i, r4 j, r5 cond, r6 bi, r7 bj, r8 dx,
    // r9 dy, r10 dz, r11 d2, r12 mag, r13..r15 temps.
    let mut a = Asm::default();
    a.bc(Op::LoadI, 2, 5);
    a.bc(Op::LoadI, 3, 0);
    a.label("i");
    a.i(Op::LtI64, 5, 3, 2);
    a.br(Op::JmpIfNot, 5, "pos");
    a.i(Op::ArrGetRef, 6, 0, 3);
    a.i(Op::AddImmI64, 4, 3, 1);
    a.label("j");
    a.i(Op::LtI64, 5, 4, 2);
    a.br(Op::JmpIfNot, 5, "inext");
    a.i(Op::ArrGetRef, 7, 0, 4);
    for (d, f) in [(8, x), (9, y), (10, z)] {
        a.i(Op::GetField, 13, 6, f);
        a.i(Op::GetField, 14, 7, f);
        a.i(Op::SubF64, d, 13, 14);
    }
    a.i(Op::MulF64, 11, 8, 8);
    a.i(Op::MulF64, 13, 9, 9);
    a.i(Op::AddF64, 11, 11, 13);
    a.i(Op::MulF64, 13, 10, 10);
    a.i(Op::AddF64, 11, 11, 13);
    a.i(Op::Math1F64, 13, 11, sqrt);
    a.i(Op::MulF64, 13, 11, 13);
    a.i(Op::DivF64, 12, 1, 13);
    for (obj, other, update) in [(6u16, 7u16, Op::SubF64), (7, 6, Op::AddF64)] {
        a.i(Op::GetField, 15, other, mass);
        for (d, f) in [(8, vx), (9, vy), (10, vz)] {
            a.i(Op::GetField, 13, obj, f);
            a.i(Op::MulF64, 14, d, 15);
            a.i(Op::MulF64, 14, 14, 12);
            a.i(update, 13, 13, 14);
            a.i(Op::SetField, obj, f, 13);
        }
    }
    a.i(Op::AddImmI64, 4, 4, 1);
    a.br(Op::Jmp, 0, "j");
    a.label("inext");
    a.i(Op::AddImmI64, 3, 3, 1);
    a.br(Op::Jmp, 0, "i");
    a.label("pos");
    a.bc(Op::LoadI, 3, 0);
    a.label("p");
    a.i(Op::LtI64, 5, 3, 2);
    a.br(Op::JmpIfNot, 5, "end");
    a.i(Op::ArrGetRef, 6, 0, 3);
    for (p, v) in [(x, vx), (y, vy), (z, vz)] {
        a.i(Op::GetField, 13, 6, p);
        a.i(Op::GetField, 14, 6, v);
        a.i(Op::MulF64, 14, 1, 14);
        a.i(Op::AddF64, 13, 13, 14);
        a.i(Op::SetField, 6, p, 13);
    }
    a.i(Op::AddImmI64, 3, 3, 1);
    a.br(Op::Jmp, 0, "p");
    a.label("end");
    a.i(Op::RetVoid, 0, 0, 0);
    let mut regs = vec![bodies_ty, F64, I64, I64, I64, BOOL, body, body];
    regs.extend([F64; 8]);
    let advance = func("Bench.advance", 2, None, regs, a.finish());

    // energy(bodies): r0 bodies, r1 e, r2 n, r3 i, r4 j, r5 cond, r6 bi, r7 bj, r8..r10 temps,
    // r11 half, r12 dx, r13 dy, r14 dz.
    let mut a = Asm::default();
    a.bc(Op::LoadK, 1, k(0.0));
    a.bc(Op::LoadK, 11, k(0.5));
    a.bc(Op::LoadI, 2, 5);
    a.bc(Op::LoadI, 3, 0);
    a.label("i");
    a.i(Op::LtI64, 5, 3, 2);
    a.br(Op::JmpIfNot, 5, "end");
    a.i(Op::ArrGetRef, 6, 0, 3);
    a.i(Op::GetField, 8, 6, mass);
    a.i(Op::MulF64, 8, 11, 8);
    a.i(Op::GetField, 9, 6, vx);
    a.i(Op::MulF64, 9, 9, 9);
    a.i(Op::GetField, 10, 6, vy);
    a.i(Op::MulF64, 10, 10, 10);
    a.i(Op::AddF64, 9, 9, 10);
    a.i(Op::GetField, 10, 6, vz);
    a.i(Op::MulF64, 10, 10, 10);
    a.i(Op::AddF64, 9, 9, 10);
    a.i(Op::MulF64, 8, 8, 9);
    a.i(Op::AddF64, 1, 1, 8);
    a.i(Op::AddImmI64, 4, 3, 1);
    a.label("j");
    a.i(Op::LtI64, 5, 4, 2);
    a.br(Op::JmpIfNot, 5, "inext");
    a.i(Op::ArrGetRef, 7, 0, 4);
    for (d, f) in [(12, x), (13, y), (14, z)] {
        a.i(Op::GetField, 8, 6, f);
        a.i(Op::GetField, 9, 7, f);
        a.i(Op::SubF64, d, 8, 9);
    }
    a.i(Op::MulF64, 8, 12, 12);
    a.i(Op::MulF64, 9, 13, 13);
    a.i(Op::AddF64, 8, 8, 9);
    a.i(Op::MulF64, 9, 14, 14);
    a.i(Op::AddF64, 8, 8, 9);
    a.i(Op::Math1F64, 8, 8, sqrt);
    a.i(Op::GetField, 9, 6, mass);
    a.i(Op::GetField, 10, 7, mass);
    a.i(Op::MulF64, 9, 9, 10);
    a.i(Op::DivF64, 9, 9, 8);
    a.i(Op::SubF64, 1, 1, 9);
    a.i(Op::AddImmI64, 4, 4, 1);
    a.br(Op::Jmp, 0, "j");
    a.label("inext");
    a.i(Op::AddImmI64, 3, 3, 1);
    a.br(Op::Jmp, 0, "i");
    a.label("end");
    a.i(Op::Ret, 1, 0, 0);
    let mut regs = vec![bodies_ty, F64, I64, I64, I64, BOOL, body, body];
    regs.extend([F64; 7]);
    let energy = func("Bench.energy", 1, Some(F64), regs, a.finish());

    // nbody(steps): r0 steps, r1 bodies, r2 i, r3 tmp, r4 cond, r5 b, r6 px, r7 py, r8 pz,
    // r9 t1, r10 t2, r11 SOLAR_MASS, r12 DAYS_PER_YEAR, r13 e0, r14 step, r15 dt,
    // r16 r17 call window, r18..r20 strings.
    const BODIES: [[f64; 7]; 5] = [
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
        [
            4.84143144246472090e+00,
            -1.16032004402742839e+00,
            -1.03622044471123109e-01,
            1.66007664274403694e-03,
            7.69901118419740425e-03,
            -6.90460016972063023e-05,
            9.54791938424326609e-04,
        ],
        [
            8.34336671824457987e+00,
            4.12479856412430479e+00,
            -4.03523417114321381e-01,
            -2.76742510726862411e-03,
            4.99852801234917238e-03,
            2.30417297573763929e-05,
            2.85885980666130812e-04,
        ],
        [
            1.28943695621391310e+01,
            -1.51111514016986312e+01,
            -2.23307578892655734e-01,
            2.96460137564761618e-03,
            2.37847173959480950e-03,
            -2.96589568540237556e-05,
            4.36624404335156298e-05,
        ],
        [
            1.53796971148509165e+01,
            -2.59193146099879641e+01,
            1.79258772950371181e-01,
            2.68067772490389322e-03,
            1.62824170038242295e-03,
            -9.51592254519715870e-05,
            5.15138902046611451e-05,
        ],
    ];
    let mut a = Asm::default();
    a.bc(Op::LoadI, 3, 5);
    a.i(Op::NewArr, 1, 3, 0);
    a.bc(Op::LoadK, 11, k(4.0));
    a.bc(Op::LoadK, 9, k(std::f64::consts::PI));
    a.i(Op::MulF64, 11, 11, 9);
    a.i(Op::MulF64, 11, 11, 9);
    a.bc(Op::LoadK, 12, k(365.24));
    for (idx, b) in BODIES.iter().enumerate() {
        a.bc(Op::NewObj, 5, 0);
        for f in 0..7u16 {
            a.bc(Op::LoadK, 9, k(b[f as usize]));
            if f >= vx && f <= vz {
                a.i(Op::MulF64, 9, 9, 12);
            } else if f == mass {
                a.i(Op::MulF64, 9, 9, 11);
            }
            a.i(Op::SetField, 5, f, 9);
        }
        a.bc(Op::LoadI, 3, idx as u32);
        a.i(Op::ArrSetRef, 1, 3, 5);
    }
    for r in [6, 7, 8] {
        a.bc(Op::LoadK, r, k(0.0));
    }
    a.bc(Op::LoadI, 2, 0);
    a.bc(Op::LoadI, 3, 5);
    a.label("om");
    a.i(Op::LtI64, 4, 2, 3);
    a.br(Op::JmpIfNot, 4, "om_end");
    a.i(Op::ArrGetRef, 5, 1, 2);
    for (acc, f) in [(6, vx), (7, vy), (8, vz)] {
        a.i(Op::GetField, 9, 5, f);
        a.i(Op::GetField, 10, 5, mass);
        a.i(Op::MulF64, 9, 9, 10);
        a.i(Op::AddF64, acc, acc, 9);
    }
    a.i(Op::AddImmI64, 2, 2, 1);
    a.br(Op::Jmp, 0, "om");
    a.label("om_end");
    a.bc(Op::LoadI, 2, 0);
    a.i(Op::ArrGetRef, 5, 1, 2);
    for (p, f) in [(6, vx), (7, vy), (8, vz)] {
        a.i(Op::NegF64, 9, p, 0);
        a.i(Op::DivF64, 9, 9, 11);
        a.i(Op::SetField, 5, f, 9);
    }
    a.i(Op::Mov, 16, 1, 0);
    a.i(Op::Call, 13, 16, 2);
    a.bc(Op::LoadK, 15, k(0.01));
    a.bc(Op::LoadI, 14, 0);
    a.label("s");
    a.i(Op::LtI64, 4, 14, 0);
    a.br(Op::JmpIfNot, 4, "s_end");
    a.i(Op::Mov, 16, 1, 0);
    a.i(Op::Mov, 17, 15, 0);
    a.i(Op::Call, 0, 16, 1);
    a.i(Op::AddImmI64, 14, 14, 1);
    a.br(Op::Jmp, 0, "s");
    a.label("s_end");
    a.i(Op::Mov, 16, 1, 0);
    a.i(Op::Call, 9, 16, 2);
    a.i(Op::FmtFixed, 18, 13, 9);
    a.i(Op::FmtFixed, 19, 9, 9);
    consts.push(Const::Str(" ".into()));
    a.bc(Op::LoadK, 20, (consts.len() - 1) as u32);
    a.i(Op::Concat, 18, 18, 20);
    a.i(Op::Concat, 18, 18, 19);
    a.i(Op::Print, 18, 2, 0);
    a.i(Op::Ret, 9, 0, 0);
    let mut regs = vec![I64, bodies_ty, I64, I64, BOOL, body];
    regs.extend([F64; 8]);
    regs.extend([I64, F64, bodies_ty, F64, Type::Str, Type::Str, Type::Str]);
    let main = func("Bench.nbody", 1, Some(F64), regs, a.finish());

    let class = Class {
        name: "Bench.Body".into(),
        fields: ["x", "y", "z", "vx", "vy", "vz", "mass"]
            .iter()
            .map(|n| Field {
                name: n.to_string(),
                ty: F64,
            })
            .collect(),
    };
    Module {
        files: vec!["Bench.cajeta".into()],
        consts,
        classes: vec![class],
        functions: vec![main, advance, energy],
        ..Default::default()
    }
}

fn time(name: &str, module: Module, entry: u32, n: i64, check: impl Fn(&Value) -> String) {
    if let Err(e) = cajeta_bytecode::verify(&module) {
        panic!("benchmark module {name} fails verification: {e}");
    }
    let mut vm = Vm::new(Arc::new(module));
    let t0 = Instant::now();
    let r = vm
        .call_index(entry, &[Value::I64(n)])
        .expect("benchmark raised a runtime error")
        .expect("no result");
    let dt = t0.elapsed().as_secs_f64();
    println!("{name} {n}: {} in {dt:.3} s", check(&r));
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let mut jobs: Vec<(String, i64)> = Vec::new();
    let mut it = args.iter();
    while let Some(name) = it.next() {
        let n = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        jobs.push((name.clone(), n));
    }
    if jobs.is_empty() {
        jobs = vec![
            ("fib".into(), 30),
            ("loop".into(), 3000),
            ("mandelbrot".into(), 500),
            ("spectral".into(), 300),
        ];
    }
    for (name, n) in jobs {
        match name.as_str() {
            "fib" => time("fib", fib_module(), 0, n, |v| format!("{v:?}")),
            "loop" => time("loop", loop_module(), 0, n, |v| format!("{v:?}")),
            "mandelbrot" => time("mandelbrot", mandelbrot_module(), 0, n, |v| match v {
                Value::I64(x) => format!("{} {}", x >> 32, x & 0xffff_ffff),
                _ => "?".into(),
            }),
            "nbody" => time("nbody", nbody_module(), 0, n, |v| format!("{v:?}")),
            "spectral" => time("spectral", spectral_module(), 2, n, |v| match v {
                Value::F64(x) => format!("{x:.9}"),
                _ => "?".into(),
            }),
            other => eprintln!("unknown benchmark {other}"),
        }
    }
}
