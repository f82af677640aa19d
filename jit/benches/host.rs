//! JIT benchmarks on the hand-assembled `fib` and `loop` modules of `vm/benches/host.rs` (the
//! shapes the compiler emits), so the numbers compare directly with the interpreter's in
//! `docs/notes/interpreter.md`.
//!
//! `cargo bench -p cajeta-jit --bench host -- [fib N] [loop N] [runs R]` (no arguments:
//! fib 30 and loop 3000). Each prints its checksum (checked against the reference), the
//! compile time and the best wall time of R calls (default 4). With `CAJETA_JIT_DISASM` set,
//! each function's machine code is printed first.

use std::time::{Duration, Instant};

#[path = "../tests/common/mod.rs"]
mod common;

use cajeta_bytecode::{Op, Type};
use cajeta_jit::JitOptions;
use common::*;

const I64: Type = Type::I64;
const BOOL: Type = Type::BOOL;

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
        jobs = vec![("fib".into(), 30), ("loop".into(), 3000)];
    }
    for (name, n) in jobs {
        match name.as_str() {
            "fib" => bench("fib", fib_module(), n, fib_ref(n), runs),
            "loop" => bench("loop", loop_module(), n, loop_ref(n), runs),
            other => eprintln!("unknown benchmark {other}"),
        }
    }
}
