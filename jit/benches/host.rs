//! JIT benchmarks on the hand-assembled `fib`, `loop` and `mandelbrot` modules of
//! `vm/benches/host.rs` (the shapes the compiler emits), so the numbers compare directly
//! with the interpreter's in `docs/notes/interpreter.md`.
//!
//! `cargo bench -p cajeta-jit --bench host -- [fib N] [loop N] [mandelbrot N] [runs R]` (no
//! arguments: fib 30, loop 3000, mandelbrot 1000). Each prints its checksum (checked against
//! the reference), the compile time and the best wall time of R calls (default 4). With
//! `CAJETA_JIT_DISASM` set, each function's machine code is printed first.

use std::time::{Duration, Instant};

#[path = "../tests/common/mod.rs"]
mod common;

use cajeta_bytecode::{Const, Instr, Module, Op, Type};
use cajeta_jit::JitOptions;
use common::*;

const I64: Type = Type::I64;
const BOOL: Type = Type::BOOL;
const F64: Type = Type::F64;

/// `int64 fib(int64 n) { if (n < 2) return n; return fib(n - 1) + fib(n - 2); }`
fn fib_module() -> std::sync::Arc<cajeta_bytecode::Module> {
    module(vec![func(
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
    )])
}

/// `s = 0; for (i = 0; i < n; i++) for (j = 0; j < n; j++) s += (i * j) % 7;`
fn loop_module() -> std::sync::Arc<cajeta_bytecode::Module> {
    // r0 n, r1 s, r2 i, r3 j, r4 cond, r5 t, r6 seven
    module(vec![func(
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
    )])
}

/// SPEC mandelbrot as a straightforward compiler emits it (every literal loaded where it is
/// used, `if (…) break;` as a branch around a jump): returns total * 2^32 + inside.
fn mandelbrot_module() -> std::sync::Arc<Module> {
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
    module_with(vec![f], consts, vec![], vec![])
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

fn fib_ref(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

fn loop_ref(n: u64) -> u64 {
    let mut s = 0;
    for i in 0..n {
        for j in 0..n {
            s += (i * j) % 7;
        }
    }
    s
}

fn bench(name: &str, m: std::sync::Arc<cajeta_bytecode::Module>, n: u64, want: u64, runs: usize) {
    let disasm = std::env::var_os("CAJETA_JIT_DISASM").is_some();
    let mut jit = make_jit(
        &m,
        JitOptions {
            disasm,
            ..JitOptions::default()
        },
    );
    let compiled = jit.compile(0).expect("compiles");
    if let Some(text) = jit.disassembly(0) {
        println!("{text}");
    }
    let mut vm = TestVm::new(m, 1 << 16);
    let mut best = Duration::MAX;
    let mut got = 0;
    for _ in 0..runs {
        let t = Instant::now();
        got = run(&mut jit, &mut vm, 0, &[n]).expect("runs").0;
        best = best.min(t.elapsed());
    }
    assert_eq!(got, want, "{name} {n}: wrong checksum");
    println!(
        "{name} {n}: {got}  jit {:.3} s (best of {runs}), compiled in {:.2} ms, {} bytes",
        best.as_secs_f64(),
        compiled.compile_time.as_secs_f64() * 1e3,
        compiled.code_size
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let mut jobs: Vec<(String, u64)> = Vec::new();
    let mut runs = 4;
    for pair in args.chunks(2) {
        match (pair[0].as_str(), pair.get(1).and_then(|v| v.parse().ok())) {
            ("runs", Some(r)) => runs = r as usize,
            (name, Some(n)) => jobs.push((name.to_string(), n)),
            _ => {}
        }
    }
    if jobs.is_empty() {
        jobs = vec![
            ("fib".into(), 30),
            ("loop".into(), 3000),
            ("mandelbrot".into(), 1000),
        ];
    }
    for (name, n) in jobs {
        match name.as_str() {
            "fib" => bench("fib", fib_module(), n, fib_ref(n), runs),
            "loop" => bench("loop", loop_module(), n, loop_ref(n), runs),
            "mandelbrot" => {
                // SPEC.md checksums: total escape iterations and points inside.
                let want = match n {
                    100 => (167715u64 << 32) | 2565,
                    1000 => (16724781 << 32) | 254700,
                    1500 => (37627012 << 32) | 572857,
                    _ => {
                        eprintln!("mandelbrot: no checksum for n = {n} (100, 1000, 1500)");
                        continue;
                    }
                };
                bench("mandelbrot", mandelbrot_module(), n, want, runs)
            }
            other => eprintln!("unknown benchmark {other}"),
        }
    }
}
