//! Host benchmarks of the interpreter on hand-assembled modules (the shapes a compiler emits
//! for /work/shared/bench/SPEC.md's `fib`, `loop`, `mandelbrot` and `spectral`).
//!
//! `cargo bench -p cajeta-vm --bench host -- [fib N] [loop N] [mandelbrot N] [spectral N]`
//! (no arguments: all four at reduced sizes). Each prints its checksum (checked against the
//! SPEC value where one is known) and the wall time of the call.

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

/// SPEC mandelbrot: returns total * 2^32 + inside.
fn mandelbrot_module() -> Module {
    let mut consts = vec![];
    let mut k = |v: f64| {
        consts.push(Const::Bits(v.to_bits()));
        (consts.len() - 1) as u32
    };
    let (k25, k125, k2, k4) = (k(2.5), k(1.25), k(2.0), k(4.0));
    // r0 n, r1 total, r2 inside, r3 py, r4 px, r5 k, r6 cond, r7 nf, r8 ci, r9 cr, r10 zr,
    // r11 zi, r12 zr2, r13 zi2, r14 t, r15 c2.5, r16 c1.25, r17 c2.0, r18 c4.0, r19 fifty, r20 tmp
    let regs = vec![
        I64, I64, I64, I64, I64, I64, BOOL, F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, F64,
        F64, I64, F64,
    ];
    let code = vec![
        ibc(Op::LoadI, 1, 0),
        ibc(Op::LoadI, 2, 0),
        i(Op::SToF64, 7, 0, 0),
        ibc(Op::LoadK, 15, k25),
        ibc(Op::LoadK, 16, k125),
        ibc(Op::LoadK, 17, k2),
        ibc(Op::LoadK, 18, k4),
        ibc(Op::LoadI, 19, 50),
        ibc(Op::LoadI, 3, 0),
        i(Op::LtI64, 6, 3, 0), // 9: py < n
        ibc(Op::JmpIfNot, 6, 42),
        i(Op::SToF64, 8, 3, 0),
        i(Op::MulF64, 8, 8, 15),
        i(Op::DivF64, 8, 8, 7),
        i(Op::SubF64, 8, 8, 16), // ci
        ibc(Op::LoadI, 4, 0),
        i(Op::LtI64, 6, 4, 0), // 16: px < n
        ibc(Op::JmpIfNot, 6, 40),
        i(Op::SToF64, 9, 4, 0),
        i(Op::MulF64, 9, 9, 15),
        i(Op::DivF64, 9, 9, 7),
        i(Op::SubF64, 9, 9, 17),   // cr
        i(Op::SubF64, 10, 10, 10), // zr = 0 (zr - zr is 0 for finite zr)
        ibc(Op::LoadK, 10, k(0.0)),
        ibc(Op::LoadK, 11, k(0.0)),
        ibc(Op::LoadI, 5, 0),
        i(Op::LtI64, 6, 5, 19), // 26: k < 50
        ibc(Op::JmpIfNot, 6, 43),
        i(Op::MulF64, 12, 10, 10),
        i(Op::MulF64, 13, 11, 11),
        i(Op::AddF64, 14, 12, 13),
        i(Op::LtF64, 6, 18, 14), // 4.0 < zr2 + zi2
        ibc(Op::JmpIf, 6, 43),
        i(Op::MulF64, 20, 17, 10),
        i(Op::MulF64, 20, 20, 11),
        i(Op::AddF64, 11, 20, 8), // zi
        i(Op::SubF64, 20, 12, 13),
        i(Op::AddF64, 10, 20, 9), // zr
        i(Op::AddImmI64, 5, 5, 1),
        ibc(Op::Jmp, 0, 26),
        // 40: next row
        i(Op::AddImmI64, 3, 3, 1),
        ibc(Op::Jmp, 0, 9),
        // 42: done
        ibc(Op::Jmp, 0, 50),
        // 43: pixel done
        i(Op::AddI64, 1, 1, 5),
        i(Op::EqI64, 6, 5, 19),
        ibc(Op::JmpIfNot, 6, 47),
        i(Op::AddImmI64, 2, 2, 1),
        // 47
        i(Op::AddImmI64, 4, 4, 1),
        ibc(Op::Jmp, 0, 16),
        i(Op::Nop, 0, 0, 0),
        // 50: return total << 32 | inside
        ibc(Op::LoadI, 5, 32),
        i(Op::ShlI64, 1, 1, 5),
        i(Op::OrI64, 1, 1, 2),
        i(Op::Ret, 1, 0, 0),
    ];
    let f = func("Bench.mandelbrot", 1, Some(I64), regs, code);
    Module {
        files: vec!["Bench.cajeta".into()],
        consts,
        functions: vec![f],
        ..Default::default()
    }
}

/// SPEC spectral norm with float64 arrays; `mulAv`/`mulAtv` are functions, `A` is inlined.
fn spectral_module() -> Module {
    let arr = Type::Array(Elem::Scalar(Scalar::F64));
    let consts = vec![Const::Bits(1.0f64.to_bits()), Const::Bits(0.0f64.to_bits())];
    // mul(n, v, out, transposed): out[i] = sum_j A(i,j or j,i) * v[j]
    // r0 n, r1 v, r2 out, r3 i, r4 j, r5 cond, r6 s, r7 ij, r8 t, r9 den(i64), r10 a(f64),
    // r11 one, r12 vj, r13 two
    let mul = |name: &str, transposed: bool| {
        let idx = if transposed { 4 } else { 3 }; // + i + 1 (A(i,j)) or + j + 1 (A(j,i))
        func(
            name,
            3,
            None,
            vec![
                I64, arr, arr, I64, I64, BOOL, F64, I64, I64, I64, F64, F64, F64, I64,
            ],
            vec![
                ibc(Op::LoadK, 11, 0),
                ibc(Op::LoadI, 13, 2),
                ibc(Op::LoadI, 3, 0),
                i(Op::LtI64, 5, 3, 0), // 3
                ibc(Op::JmpIfNot, 5, 24),
                ibc(Op::LoadK, 6, 1),
                ibc(Op::LoadI, 4, 0),
                i(Op::LtI64, 5, 4, 0), // 7
                ibc(Op::JmpIfNot, 5, 21),
                i(Op::AddI64, 7, 3, 4),
                i(Op::AddImmI64, 8, 7, 1),
                i(Op::MulI64, 9, 7, 8),
                i(Op::DivI64, 9, 9, 13),
                i(Op::AddI64, 9, 9, idx),
                i(Op::AddImmI64, 9, 9, 1),
                i(Op::SToF64, 10, 9, 0),
                i(Op::DivF64, 10, 11, 10),
                i(Op::ArrGetF64, 12, 1, 4),
                i(Op::MulF64, 10, 10, 12),
                i(Op::AddF64, 6, 6, 10),
                i(Op::AddImmI64, 4, 4, 1), // 20 -> wrong index fixed below
                ibc(Op::Jmp, 0, 7),
                i(Op::ArrSetF64, 2, 3, 6),
                i(Op::AddImmI64, 3, 3, 1),
                ibc(Op::Jmp, 0, 3),
                i(Op::RetVoid, 0, 0, 0),
            ],
        )
    };
    let mut mul_av = mul("Bench.mulAv", false);
    let mut mul_atv = mul("Bench.mulAtv", true);
    for f in [&mut mul_av, &mut mul_atv] {
        // Patch the branch targets to the layout above: inner exit -> 22, outer exit -> 25.
        f.code[8] = ibc(Op::JmpIfNot, 5, 22);
        f.code[4] = ibc(Op::JmpIfNot, 5, 25);
    }
    // main(n): u = 1s, v, tmp; 10 x (mulAtAv(u) -> v, mulAtAv(v) -> u); sqrt(vBv / vv)
    // r0 n, r1 u, r2 v, r3 tmp, r4 i, r5 cond, r6 one, r7 rep, r8 ten, r9 vbv, r10 vv,
    // r11 x, r12 y, r13.. call window (n, v, out)
    let main = func(
        "Bench.spectral",
        1,
        Some(F64),
        vec![
            I64, arr, arr, arr, I64, BOOL, F64, I64, I64, F64, F64, F64, F64, I64, arr, arr,
        ],
        vec![
            i(Op::NewArr, 1, 0, 0),
            i(Op::NewArr, 2, 0, 0),
            i(Op::NewArr, 3, 0, 0),
            ibc(Op::LoadK, 6, 0),
            ibc(Op::LoadI, 4, 0),
            i(Op::LtI64, 5, 4, 0), // 5
            ibc(Op::JmpIfNot, 5, 10),
            i(Op::ArrSetF64, 1, 4, 6),
            i(Op::AddImmI64, 4, 4, 1),
            ibc(Op::Jmp, 0, 5),
            ibc(Op::LoadI, 7, 0), // 10
            ibc(Op::LoadI, 8, 10),
            i(Op::LtI64, 5, 7, 8), // 12
            ibc(Op::JmpIfNot, 5, 34),
            // mulAv(n, u, tmp); mulAtv(n, tmp, v); mulAv(n, v, tmp); mulAtv(n, tmp, u)
            i(Op::Mov, 13, 0, 0),
            i(Op::Mov, 14, 1, 0),
            i(Op::Mov, 15, 3, 0),
            i(Op::Call, 13, 13, 0),
            i(Op::Mov, 13, 0, 0),
            i(Op::Mov, 14, 3, 0),
            i(Op::Mov, 15, 2, 0),
            i(Op::Call, 13, 13, 1),
            i(Op::Mov, 13, 0, 0),
            i(Op::Mov, 14, 2, 0),
            i(Op::Mov, 15, 3, 0),
            i(Op::Call, 13, 13, 0),
            i(Op::Mov, 13, 0, 0),
            i(Op::Mov, 14, 3, 0),
            i(Op::Mov, 15, 1, 0),
            i(Op::Call, 13, 13, 1),
            i(Op::AddImmI64, 7, 7, 1),
            ibc(Op::Jmp, 0, 12),
            i(Op::Nop, 0, 0, 0),
            i(Op::Nop, 0, 0, 0),
            // 34: vBv, vv
            ibc(Op::LoadK, 9, 1),
            ibc(Op::LoadK, 10, 1),
            ibc(Op::LoadI, 4, 0),
            i(Op::LtI64, 5, 4, 0), // 37
            ibc(Op::JmpIfNot, 5, 47),
            i(Op::ArrGetF64, 11, 1, 4),
            i(Op::ArrGetF64, 12, 2, 4),
            i(Op::MulF64, 11, 11, 12),
            i(Op::AddF64, 9, 9, 11),
            i(Op::MulF64, 12, 12, 12),
            i(Op::AddF64, 10, 10, 12),
            i(Op::AddImmI64, 4, 4, 1),
            ibc(Op::Jmp, 0, 37),
            i(Op::DivF64, 9, 9, 10), // 47
            i(Op::Math1F64, 9, 9, 0),
            i(Op::Ret, 9, 0, 0),
        ],
    );
    Module {
        files: vec!["Bench.cajeta".into()],
        consts,
        functions: vec![mul_av, mul_atv, main],
        ..Default::default()
    }
}

fn time(name: &str, module: Module, entry: u32, n: i64, check: impl Fn(&Value) -> String) {
    let mut vm = Vm::new(Arc::new(module));
    let t0 = Instant::now();
    let r = vm
        .call(entry, &[Value::I64(n)])
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
            "spectral" => time("spectral", spectral_module(), 2, n, |v| match v {
                Value::F64(x) => format!("{x:.9}"),
                _ => "?".into(),
            }),
            other => eprintln!("unknown benchmark {other}"),
        }
    }
}
