//! The `cpu` backend on hand-built, verified kernel modules: results, the deterministic lane
//! schedule, faults with their exact messages, launch validation and memory accounting.

mod common;

use std::sync::Arc;

use cajeta_backends::cpu::{CpuBackend, CpuConfig};
use cajeta_backends::{Backend, KernelArg, LaunchError, MemoryKind};
use cajeta_bytecode::{Const, Function, Module, Op, Scalar};
use common::*;

fn serial() -> CpuBackend {
    CpuBackend::with_config(CpuConfig {
        workers: 1,
        serial: true,
    })
}

fn parallel() -> CpuBackend {
    CpuBackend::with_config(CpuConfig {
        workers: 4,
        serial: false,
    })
}

/// `saxpy(float32 a, KernelBuffer<float32> x, KernelBuffer<float32> y, uint32 n)`:
/// `y[i] = a * x[i] + y[i]` for `i = globalIdX()`, under `if (i < n)` when `guard`.
fn saxpy(guard: bool) -> Function {
    let mut k = Asm::kernel("demo.Saxpy.saxpy");
    let a = k.param("a", F32);
    let x = k.param("x", buf(Scalar::F32));
    let y = k.param("y", buf(Scalar::F32));
    let n = k.param("n", U32);
    let i = k.local("i", U32);
    let c = k.reg(BOOL);
    let idx = k.reg(I64);
    let xv = k.reg(F32);
    let yv = k.reg(F32);
    k.op(Op::Geom, i, 9, 0);
    if guard {
        k.op(Op::LtU32, c, i, n).jump(Op::JmpIfNot, c, "end");
    }
    k.op(Op::WrapI64, idx, i, 0)
        .op(Op::DevGetF32, xv, x, idx)
        .op(Op::DevGetF32, yv, y, idx)
        .op(Op::MulF32, xv, a, xv)
        .op(Op::AddF32, xv, xv, yv)
        .op(Op::DevSetF32, y, idx, xv)
        .label("end")
        .op(Op::RetVoid, 0, 0, 0);
    k.finish()
}

fn saxpy_args(
    b: &dyn Backend,
    n: usize,
    a: f32,
) -> (Vec<KernelArg>, cajeta_backends::StorageId, Vec<f32>) {
    let xs: Vec<f32> = (0..n).map(|i| (i as f32) * 0.5 - 3.0).collect();
    let ys: Vec<f32> = (0..n).map(|i| 1.0 / (i as f32 + 1.0)).collect();
    let want: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| a * x + y).collect();
    let x = upload(b, &xs);
    let y = upload(b, &ys);
    let args = vec![
        KernelArg::Scalar(u64::from(a.to_bits())),
        arg(x, n),
        arg(y, n),
        KernelArg::Scalar(n as u64),
    ];
    (args, y, want)
}

#[test]
fn saxpy_with_a_bounds_guard() {
    for b in [serial(), parallel()] {
        let m = module(vec![saxpy(true)], vec![]);
        let n = 1000;
        let (args, y, want) = saxpy_args(&b, n, 2.5);
        launch(&b, &m, 0, dims([4, 1, 1], [256, 1, 1]), &args).unwrap();
        let got: Vec<f32> = download(&b, y, n);
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}

/// `sum(KernelBuffer<int32> input, KernelBuffer<int32> out)`: a tree reduction of each
/// workgroup's 64 elements in shared memory, with a barrier per level.
fn reduction() -> Function {
    let mut k = Asm::kernel("demo.R.sum");
    let input = k.param("input", buf(Scalar::I32));
    let out = k.param("out", buf(Scalar::I32));
    let tile = k.local("tile", cajeta_bytecode::Type::Shared(Scalar::I32));
    let slot = k.shared(Scalar::I32, 64);
    let t = k.local("t", U32);
    let g = k.reg(U32);
    let ti = k.reg(I64);
    let gi = k.reg(I64);
    let v = k.reg(I32);
    let v2 = k.reg(I32);
    let s = k.local("s", U32);
    let c = k.reg(BOOL);
    let zero = k.reg(U32);
    let one = k.reg(U32);
    let ts = k.reg(U32);
    let tsi = k.reg(I64);
    let w = k.reg(U32);
    let wi = k.reg(I64);
    let z64 = k.reg(I64);
    k.op(Op::SharedRef, tile, slot, 0)
        .op(Op::Geom, t, 0, 0)
        .op(Op::Geom, g, 9, 0)
        .op(Op::WrapI64, gi, g, 0)
        .op(Op::DevGetI32, v, input, gi)
        .op(Op::WrapI64, ti, t, 0)
        .op(Op::DevSetI32, tile, ti, v)
        .op(Op::Barrier, 0, 0, 0)
        .loadi(s, 32)
        .loadi(zero, 0)
        .loadi(one, 1)
        .loadi(z64, 0)
        .label("loop")
        .op(Op::EqU32, c, s, zero)
        .jump(Op::JmpIf, c, "done")
        .op(Op::LtU32, c, t, s)
        .jump(Op::JmpIfNot, c, "sync")
        .op(Op::AddU32, ts, t, s)
        .op(Op::WrapI64, tsi, ts, 0)
        .op(Op::DevGetI32, v2, tile, tsi)
        .op(Op::DevGetI32, v, tile, ti)
        .op(Op::AddI32, v, v, v2)
        .op(Op::DevSetI32, tile, ti, v)
        .label("sync")
        .op(Op::Barrier, 0, 0, 0)
        .op(Op::ShrU32, s, s, one)
        .jump(Op::Jmp, 0, "loop")
        .label("done")
        .op(Op::EqU32, c, t, zero)
        .jump(Op::JmpIfNot, c, "end")
        .op(Op::Geom, w, 3, 0)
        .op(Op::WrapI64, wi, w, 0)
        .op(Op::DevGetI32, v, tile, z64)
        .op(Op::DevSetI32, out, wi, v)
        .label("end")
        .op(Op::RetVoid, 0, 0, 0);
    k.finish()
}

fn run_reduction(b: &dyn Backend, groups: usize) -> (Vec<i32>, Vec<i32>) {
    let m = module(vec![reduction()], vec![]);
    let n = groups * 64;
    let data: Vec<i32> = (0..n as i32).map(|i| (i * 7919) % 1000 - 500).collect();
    let want: Vec<i32> = data.chunks(64).map(|c| c.iter().sum()).collect();
    let input = upload(b, &data);
    let out = upload(b, &vec![0i32; groups]);
    launch(
        b,
        &m,
        0,
        dims([groups as u32, 1, 1], [64, 1, 1]),
        &[arg(input, n), arg(out, groups)],
    )
    .unwrap();
    (download(b, out, groups), want)
}

#[test]
fn shared_memory_reduction_with_barriers() {
    for b in [serial(), parallel()] {
        let (got, want) = run_reduction(&b, 37);
        assert_eq!(got, want);
    }
}

#[test]
fn shared_memory_is_zeroed_per_workgroup() {
    // `acc`: every item adds 1 to shared[0]; item 0 writes it out after a barrier. A shared
    // array carried over between workgroups would give 2 * block and more.
    let mut k = Asm::kernel("demo.S.count");
    let out = k.param("out", buf(Scalar::U32));
    let sh = k.local("acc", cajeta_bytecode::Type::Shared(Scalar::U32));
    let slot = k.shared(Scalar::U32, 4);
    let one = k.reg(U32);
    let z = k.reg(I64);
    let t = k.reg(U32);
    let c = k.reg(BOOL);
    let zero = k.reg(U32);
    let w = k.reg(U32);
    let wi = k.reg(I64);
    k.op(Op::SharedRef, sh, slot, 0)
        .loadi(one, 1)
        .loadi(z, 0)
        .loadi(zero, 0)
        .op(Op::AtomicAddU32, one, sh, z)
        .op(Op::Barrier, 0, 0, 0)
        .op(Op::Geom, t, 0, 0)
        .op(Op::EqU32, c, t, zero)
        .jump(Op::JmpIfNot, c, "end")
        .op(Op::DevGetU32, one, sh, z)
        .op(Op::Geom, w, 3, 0)
        .op(Op::WrapI64, wi, w, 0)
        .op(Op::DevSetU32, out, wi, one)
        .label("end")
        .op(Op::RetVoid, 0, 0, 0);
    let m = module(vec![k.finish()], vec![]);
    for b in [serial(), parallel()] {
        let out = upload(&b, &[0u32; 9]);
        launch(&b, &m, 0, dims([9, 1, 1], [16, 1, 1]), &[arg(out, 9)]).unwrap();
        assert_eq!(download::<u32>(&b, out, 9), vec![16; 9]);
    }
}

/// `atoms(counter, sum, olds, fsum)`: each item adds 1 to `counter[0]` (keeping the old value
/// in `olds[g]`), its global id to `sum[0]` and 1.0 to `fsum[0]`.
fn atomics() -> Function {
    let mut k = Asm::kernel("demo.A.atoms");
    let counter = k.param("counter", buf(Scalar::U32));
    let sum = k.param("sum", buf(Scalar::I64));
    let olds = k.param("olds", buf(Scalar::U32));
    let fsum = k.param("fsum", buf(Scalar::F32));
    let g = k.reg(U32);
    let gi = k.reg(I64);
    let z = k.reg(I64);
    let old = k.reg(U32);
    let val = k.reg(I64);
    let fone = k.reg(F32);
    k.op(Op::Geom, g, 9, 0)
        .op(Op::WrapI64, gi, g, 0)
        .loadi(z, 0)
        .loadi(old, 1)
        .op(Op::AtomicAddU32, old, counter, z)
        .op(Op::DevSetU32, olds, gi, old)
        .op(Op::Mov, val, gi, 0)
        .op(Op::AtomicAddI64, val, sum, z)
        .bc(Op::LoadK, fone, 0)
        .op(Op::AtomicAddF32, fone, fsum, z)
        .op(Op::RetVoid, 0, 0, 0);
    k.finish()
}

fn run_atomics(b: &dyn Backend) -> (u32, i64, Vec<u32>, f32) {
    let m = module(
        vec![atomics()],
        vec![Const::Bits(u64::from(1.0f32.to_bits()))],
    );
    let n = 100 * 64;
    let counter = upload(b, &[0u32]);
    let sum = upload(b, &[0i64]);
    let olds = upload(b, &vec![0u32; n]);
    let fsum = upload(b, &[0f32]);
    launch(
        b,
        &m,
        0,
        dims([100, 1, 1], [64, 1, 1]),
        &[arg(counter, 1), arg(sum, 1), arg(olds, n), arg(fsum, 1)],
    )
    .unwrap();
    (
        download(b, counter, 1)[0],
        download(b, sum, 1)[0],
        download(b, olds, n),
        download(b, fsum, 1)[0],
    )
}

#[test]
fn atomic_counter_over_many_workgroups() {
    let n = 6400u32;
    // Serial: the schedule is fixed, so even the old values are: item g saw g.
    let (count, sum, olds, fsum) = run_atomics(&serial());
    assert_eq!(
        (count, sum, fsum),
        (n, i64::from(n) * i64::from(n - 1) / 2, n as f32)
    );
    assert_eq!(olds, (0..n).collect::<Vec<_>>());
    // Parallel: integer results are the same on every run; the old values are a permutation.
    let b = parallel();
    for _ in 0..3 {
        let (count, sum, mut olds, fsum) = run_atomics(&b);
        assert_eq!(
            (count, sum, fsum),
            (n, i64::from(n) * i64::from(n - 1) / 2, n as f32)
        );
        olds.sort_unstable();
        assert_eq!(olds, (0..n).collect::<Vec<_>>());
    }
}

#[test]
fn integer_atomics_wrap() {
    let mut k = Asm::kernel("demo.A.wrap");
    let w = k.param("w", buf(Scalar::I32));
    let old = k.param("old", buf(Scalar::I32));
    let z = k.reg(I64);
    let v = k.reg(I32);
    k.loadi(z, 0)
        .loadi(v, 1)
        .op(Op::AtomicAddI32, v, w, z)
        .op(Op::DevSetI32, old, z, v)
        .op(Op::RetVoid, 0, 0, 0);
    let m = module(vec![k.finish()], vec![]);
    let b = serial();
    let w = upload(&b, &[i32::MAX]);
    let old = upload(&b, &[0i32]);
    launch(
        &b,
        &m,
        0,
        dims([1, 1, 1], [1, 1, 1]),
        &[arg(w, 1), arg(old, 1)],
    )
    .unwrap();
    assert_eq!(download::<i32>(&b, w, 1), vec![i32::MIN]);
    assert_eq!(
        download::<i32>(&b, old, 1),
        vec![i32::MAX],
        "old value, sign-extended"
    );
}

/// `geo(out, w, h)`: every item stores the 15 `geom` values at `out[15 * lin + s]`, `lin` its
/// linear global index in a `w × h × …` volume.
fn geometry() -> Function {
    let mut k = Asm::kernel("demo.G.geo");
    let out = k.param("out", buf(Scalar::U32));
    let w = k.param("w", U32);
    let h = k.param("h", U32);
    let (gx, gy, gz) = (k.reg(U32), k.reg(U32), k.reg(U32));
    let lin = k.reg(U32);
    let fifteen = k.reg(U32);
    let v = k.reg(U32);
    let kk = k.reg(U32);
    let at = k.reg(U32);
    let idx = k.reg(I64);
    k.op(Op::Geom, gx, 9, 0)
        .op(Op::Geom, gy, 10, 0)
        .op(Op::Geom, gz, 11, 0)
        .op(Op::MulU32, lin, gz, h)
        .op(Op::AddU32, lin, lin, gy)
        .op(Op::MulU32, lin, lin, w)
        .op(Op::AddU32, lin, lin, gx)
        .loadi(fifteen, 15)
        .op(Op::MulU32, lin, lin, fifteen);
    for s in 0..15u16 {
        k.op(Op::Geom, v, s, 0)
            .loadi(kk, i32::from(s))
            .op(Op::AddU32, at, lin, kk)
            .op(Op::WrapI64, idx, at, 0)
            .op(Op::DevSetU32, out, idx, v);
    }
    k.op(Op::RetVoid, 0, 0, 0);
    k.finish()
}

fn run_geometry(b: &dyn Backend, grid: [u32; 3], block: [u32; 3]) -> Vec<u32> {
    let m = module(vec![geometry()], vec![]);
    let (w, h, d) = (grid[0] * block[0], grid[1] * block[1], grid[2] * block[2]);
    let n = (w * h * d * 15) as usize;
    let out = upload(b, &vec![u32::MAX; n]);
    launch(
        b,
        &m,
        0,
        dims(grid, block),
        &[
            arg(out, n),
            KernelArg::Scalar(u64::from(w)),
            KernelArg::Scalar(u64::from(h)),
        ],
    )
    .unwrap();
    download(b, out, n)
}

#[test]
fn three_dimensional_geometry() {
    let (grid, block) = ([2, 3, 2], [3, 2, 2]);
    let got = run_geometry(&serial(), grid, block);
    let (w, h) = (grid[0] * block[0], grid[1] * block[1]);
    for z in 0..grid[2] * block[2] {
        for y in 0..h {
            for x in 0..w {
                let lin = ((z * h + y) * w + x) as usize;
                let g = [x, y, z];
                let mut want = vec![];
                want.extend((0..3).map(|a| g[a] % block[a]));
                want.extend((0..3).map(|a| g[a] / block[a]));
                want.extend(block);
                want.extend(g);
                want.extend(grid);
                assert_eq!(&got[lin * 15..lin * 15 + 15], &want[..], "item at {g:?}");
            }
        }
    }
    assert_eq!(run_geometry(&parallel(), grid, block), got);
}

/// A kernel calling `madd(a, x, y) = a * x + y` and `put(dst, i, v)` (a device function
/// storing into its buffer parameter), at element `i + shift`.
fn calls() -> Vec<Function> {
    let mut madd = Asm::device("demo.C.madd", Some(F32));
    let (a, x, y) = (
        madd.param("a", F32),
        madd.param("x", F32),
        madd.param("y", F32),
    );
    let r = madd.reg(F32);
    madd.op(Op::MulF32, r, a, x)
        .op(Op::AddF32, r, r, y)
        .op(Op::Ret, r, 0, 0);

    let mut put = Asm::device("demo.C.put", None);
    let (dst, i, v) = (
        put.param("dst", buf(Scalar::F32)),
        put.param("i", I64),
        put.param("v", F32),
    );
    put.op(Op::DevSetF32, dst, i, v).op(Op::RetVoid, 0, 0, 0);

    let mut k = Asm::kernel("demo.C.k");
    let xs = k.param("xs", buf(Scalar::F32));
    let out = k.param("out", buf(Scalar::F32));
    let a = k.param("a", F32);
    let shift = k.param("shift", I64);
    let g = k.reg(U32); // r4
    let i = k.reg(I64); // r5
    let xv = k.reg(F32); // r6
    let res = k.reg(F32); // r7
                          // Call windows: madd at r8..r10, put at r11..r13.
    let w1: Vec<u16> = (0..3).map(|_| k.reg(F32)).collect();
    let w2 = [k.reg(buf(Scalar::F32)), k.reg(I64), k.reg(F32)];
    k.op(Op::Geom, g, 9, 0)
        .op(Op::WrapI64, i, g, 0)
        .op(Op::DevGetF32, xv, xs, i)
        .op(Op::Mov, w1[0], a, 0)
        .op(Op::Mov, w1[1], xv, 0)
        .op(Op::Mov, w1[2], xv, 0)
        .op(Op::Call, res, w1[0], 1)
        .op(Op::Mov, w2[0], out, 0)
        .op(Op::AddI64, w2[1], i, shift)
        .op(Op::Mov, w2[2], res, 0)
        .op(Op::Call, 0, w2[0], 2)
        .op(Op::RetVoid, 0, 0, 0);
    vec![k.finish(), madd.finish(), put.finish()]
}

#[test]
fn device_function_calls() {
    let m = module(calls(), vec![]);
    for b in [serial(), parallel()] {
        let n = 64;
        let xs: Vec<f32> = (0..n).map(|i| i as f32 * 1.25).collect();
        let x = upload(&b, &xs);
        let out = upload(&b, &vec![0f32; n]);
        let a = 3.0f32;
        let args = [
            arg(x, n),
            arg(out, n),
            KernelArg::Scalar(u64::from(a.to_bits())),
            KernelArg::Scalar(0),
        ];
        launch(&b, &m, 0, dims([2, 1, 1], [32, 1, 1]), &args).unwrap();
        let want: Vec<f32> = xs.iter().map(|&x| a * x + x).collect();
        assert_eq!(download::<f32>(&b, out, n), want);
    }
}

#[test]
fn bounds_fault_inside_a_device_function_lists_the_frames() {
    let m = module(calls(), vec![]);
    let b = parallel();
    let n = 64;
    let x = upload(&b, &vec![1f32; n]);
    let out = upload(&b, &vec![0f32; n]);
    let args = [
        arg(x, n),
        arg(out, n),
        KernelArg::Scalar(0),
        KernelArg::Scalar(10),
    ];
    let err = launch(&b, &m, 0, dims([2, 1, 1], [32, 1, 1]), &args).unwrap_err();
    let LaunchError::Fault(f) = err else {
        panic!("expected a fault, got {err:?}")
    };
    assert_eq!(f.code, "XPU-E-BOUNDS");
    assert_eq!(
        f.message,
        "kernel k: index 64 out of bounds for length 64 (buffer dst, workgroup (1,0,0), item (22,0,0))"
    );
    // Innermost first: the store in `put`, then the kernel's call of `put`.
    assert_eq!(f.frames, vec![(2, 0), (0, 10)]);
}

#[test]
fn out_of_bounds_reports_the_lowest_faulting_workgroup() {
    // No guard: items 1000.. of every workgroup from 3 on fault; x is read first.
    let m = module(vec![saxpy(false)], vec![]);
    for b in [serial(), parallel()] {
        let n = 1000;
        let (args, _, _) = saxpy_args(&b, n, 1.0);
        let err = launch(&b, &m, 0, dims([40, 1, 1], [256, 1, 1]), &args).unwrap_err();
        let LaunchError::Fault(f) = err else {
            panic!("expected a fault, got {err:?}")
        };
        assert_eq!(f.code, "XPU-E-BOUNDS");
        assert_eq!(
            f.message,
            "kernel saxpy: index 1000 out of bounds for length 1000 (buffer x, workgroup (3,0,0), item (232,0,0))"
        );
        assert_eq!(f.frames, vec![(0, 2)]);
    }
}

#[test]
fn out_of_bounds_shared_index() {
    let mut k = Asm::kernel("demo.S.oob");
    let tile = k.local("tile", cajeta_bytecode::Type::Shared(Scalar::F64));
    let slot = k.shared(Scalar::F64, 8);
    let t = k.reg(U32);
    let i = k.reg(I64);
    let v = k.reg(cajeta_bytecode::Type::F64);
    k.op(Op::SharedRef, tile, slot, 0)
        .op(Op::Geom, t, 0, 0)
        .op(Op::WrapI64, i, t, 0)
        .op(Op::AddImmI64, i, i, (-3i16) as u16)
        .op(Op::DevGetF64, v, tile, i)
        .op(Op::RetVoid, 0, 0, 0);
    let m = module(vec![k.finish()], vec![]);
    let err = launch(&serial(), &m, 0, dims([1, 2, 1], [4, 1, 1]), &[]).unwrap_err();
    let LaunchError::Fault(f) = err else {
        panic!("expected a fault, got {err:?}")
    };
    assert_eq!(
        (f.code, f.message.as_str()),
        (
            "XPU-E-BOUNDS",
            "kernel oob: index -3 out of bounds for length 8 (shared tile, workgroup (0,0,0), item (0,0,0))"
        )
    );
}

/// `div(out)`: `out[t] = 100 / (t - 3)` (int32), or `MIN / (t - 4)` with `overflow`.
fn division(overflow: bool) -> Function {
    let mut k = Asm::kernel("demo.D.div");
    let out = k.param("out", buf(Scalar::I32));
    let t = k.reg(U32);
    let ti = k.reg(I32);
    let three = k.reg(I32);
    let d = k.reg(I32);
    let h = k.reg(I32);
    let q = k.reg(I32);
    let idx = k.reg(I64);
    k.op(Op::Geom, t, 0, 0)
        .op(Op::WrapI32, ti, t, 0)
        .loadi(three, if overflow { 4 } else { 3 })
        .op(Op::SubI32, d, ti, three)
        .loadi(h, if overflow { i32::MIN } else { 100 })
        .op(Op::DivI32, q, h, d)
        .op(Op::WrapI64, idx, t, 0)
        .op(Op::DevSetI32, out, idx, q)
        .op(Op::RetVoid, 0, 0, 0);
    k.finish()
}

#[test]
fn division_by_zero_faults_after_the_earlier_items_ran() {
    let m = module(vec![division(false)], vec![]);
    let b = parallel();
    let out = upload(&b, &[7i32; 8]);
    let err = launch(&b, &m, 0, dims([1, 1, 1], [8, 1, 1]), &[arg(out, 8)]).unwrap_err();
    let LaunchError::Fault(f) = err else {
        panic!("expected a fault, got {err:?}")
    };
    assert_eq!(
        (f.code, f.message.as_str(), f.frames.clone()),
        (
            "E-DIVZERO",
            "kernel div: integer division by zero (workgroup (0,0,0), item (3,0,0))",
            vec![(0, 5)]
        )
    );
    // Items run in increasing l: 0..2 finished, 4.. never ran.
    assert_eq!(
        download::<i32>(&b, out, 8),
        vec![-33, -50, -100, 7, 7, 7, 7, 7]
    );
}

#[test]
fn min_divided_by_minus_one_overflows() {
    let m = module(vec![division(true)], vec![]);
    let b = serial();
    let out = upload(&b, &[0i32; 8]);
    let err = launch(&b, &m, 0, dims([1, 1, 1], [8, 1, 1]), &[arg(out, 8)]).unwrap_err();
    let LaunchError::Fault(f) = err else {
        panic!("expected a fault, got {err:?}")
    };
    assert_eq!(f.code, "E-OVERFLOW");
    assert_eq!(
        f.message,
        "kernel div: integer overflow in division (workgroup (0,0,0), item (3,0,0))"
    );
}

/// `if (t < 2) { Barrier.workgroup(); } else { Barrier.workgroup(); }`, or with `early`
/// `if (t < 2) return; Barrier.workgroup();`.
fn barriers(early: bool) -> Function {
    let mut k = Asm::kernel("demo.B.split");
    let t = k.reg(U32);
    let two = k.reg(U32);
    let c = k.reg(BOOL);
    k.op(Op::Geom, t, 0, 0)
        .loadi(two, 2)
        .op(Op::LtU32, c, t, two)
        .jump(Op::JmpIfNot, c, "else");
    if early {
        k.op(Op::RetVoid, 0, 0, 0);
    } else {
        k.op(Op::Barrier, 0, 0, 0).jump(Op::Jmp, 0, "end");
    }
    k.label("else")
        .op(Op::Barrier, 0, 0, 0)
        .label("end")
        .op(Op::RetVoid, 0, 0, 0);
    k.finish()
}

#[test]
fn divergent_barrier() {
    let m = module(vec![barriers(false)], vec![]);
    let err = launch(&parallel(), &m, 0, dims([3, 1, 1], [4, 1, 1]), &[]).unwrap_err();
    let LaunchError::Fault(f) = err else {
        panic!("expected a fault, got {err:?}")
    };
    assert_eq!(
        (f.code, f.message.as_str(), f.frames.clone()),
        (
            "XPU-E-DIVERGENT",
            "kernel split: divergent barrier (workgroup (0,0,0), item (2,0,0))",
            vec![(0, 6)]
        )
    );
}

#[test]
fn returned_items_leave_the_barrier() {
    let m = module(vec![barriers(true)], vec![]);
    launch(&parallel(), &m, 0, dims([3, 1, 1], [4, 1, 1]), &[]).unwrap();
}

#[test]
fn barrier_inside_a_device_function() {
    // tile[t] = t + 10 * w; wait(); out[g] = tile[(t + 1) % 16], with wait() a device
    // function holding the barrier.
    let mut wait = Asm::device("demo.B.wait", None);
    wait.op(Op::Barrier, 0, 0, 0).op(Op::RetVoid, 0, 0, 0);
    let mut k = Asm::kernel("demo.B.rotate");
    let out = k.param("out", buf(Scalar::U32));
    let tile = k.local("tile", cajeta_bytecode::Type::Shared(Scalar::U32));
    let slot = k.shared(Scalar::U32, 16);
    let (t, w, g, v, ten, one, sixteen) = (
        k.reg(U32),
        k.reg(U32),
        k.reg(U32),
        k.reg(U32),
        k.reg(U32),
        k.reg(U32),
        k.reg(U32),
    );
    let i = k.reg(I64);
    k.op(Op::SharedRef, tile, slot, 0)
        .op(Op::Geom, t, 0, 0)
        .op(Op::Geom, w, 3, 0)
        .op(Op::Geom, g, 9, 0)
        .loadi(ten, 10)
        .loadi(one, 1)
        .loadi(sixteen, 16)
        .op(Op::MulU32, v, w, ten)
        .op(Op::AddU32, v, v, t)
        .op(Op::WrapI64, i, t, 0)
        .op(Op::DevSetU32, tile, i, v)
        .op(Op::Call, 0, 10, 1)
        .op(Op::AddU32, v, t, one)
        .op(Op::RemU32, v, v, sixteen)
        .op(Op::WrapI64, i, v, 0)
        .op(Op::DevGetU32, v, tile, i)
        .op(Op::WrapI64, i, g, 0)
        .op(Op::DevSetU32, out, i, v)
        .op(Op::RetVoid, 0, 0, 0);
    let m = module(vec![k.finish(), wait.finish()], vec![]);
    for b in [serial(), parallel()] {
        let out = upload(&b, &[0u32; 48]);
        launch(&b, &m, 0, dims([3, 1, 1], [16, 1, 1]), &[arg(out, 48)]).unwrap();
        let want: Vec<u32> = (0..48u32)
            .map(|g| 10 * (g / 16) + (g % 16 + 1) % 16)
            .collect();
        assert_eq!(download::<u32>(&b, out, 48), want);
    }
}

#[test]
fn loads_extend_and_stores_truncate_by_type() {
    // out64[i] = int64(in8[i]); out16[i] = (uint16) (in8[i] as uint8 widened) …
    let mut k = Asm::kernel("demo.T.widen");
    let i8s = k.param("i8s", buf(Scalar::I8));
    let u16s = k.param("u16s", buf(Scalar::U16));
    let out = k.param("out", buf(Scalar::I64));
    let outu = k.param("outu", buf(Scalar::U64));
    let narrow = k.param("narrow", buf(Scalar::I16));
    let t = k.reg(U32);
    let i = k.reg(I64);
    let b8 = k.reg(cajeta_bytecode::Type::Scalar(Scalar::I8));
    let w = k.reg(I64);
    let h = k.reg(cajeta_bytecode::Type::Scalar(Scalar::U16));
    let wu = k.reg(U64);
    let n16 = k.reg(cajeta_bytecode::Type::Scalar(Scalar::I16));
    k.op(Op::Geom, t, 0, 0)
        .op(Op::WrapI64, i, t, 0)
        .op(Op::DevGetI8, b8, i8s, i)
        .op(Op::WrapI64, w, b8, 0)
        .op(Op::DevSetI64, out, i, w)
        .op(Op::DevGetU16, h, u16s, i)
        .op(Op::WrapU64, wu, h, 0)
        .op(Op::DevSetU64, outu, i, wu)
        .op(Op::WrapI16, n16, w, 0)
        .op(Op::DevSetI16, narrow, i, n16)
        .op(Op::RetVoid, 0, 0, 0);
    let m = module(vec![k.finish()], vec![]);
    let b = serial();
    let a = upload(&b, &[-1i8, 5, -128]);
    let u = upload(&b, &[0xFFFFu16, 1, 0x8000]);
    let out = upload(&b, &[0i64; 3]);
    let outu = upload(&b, &[0u64; 3]);
    let narrow = upload(&b, &[0i16; 3]);
    let args = [
        arg(a, 3),
        arg(u, 3),
        arg(out, 3),
        arg(outu, 3),
        arg(narrow, 3),
    ];
    launch(&b, &m, 0, dims([1, 1, 1], [3, 1, 1]), &args).unwrap();
    assert_eq!(download::<i64>(&b, out, 3), vec![-1, 5, -128]);
    assert_eq!(download::<u64>(&b, outu, 3), vec![0xFFFF, 1, 0x8000]);
    assert_eq!(download::<i16>(&b, narrow, 3), vec![-1, 5, -128]);
}

#[test]
fn views_and_buffer_length() {
    // fill(b): b[i] = b.length() for i < b.length(), i = globalIdX.
    let mut k = Asm::kernel("demo.V.fill");
    let bb = k.param("b", buf(Scalar::U32));
    let len = k.reg(U64);
    let g = k.reg(U32);
    let g64 = k.reg(U64);
    let c = k.reg(BOOL);
    let v = k.reg(U32);
    let i = k.reg(I64);
    k.op(Op::BufLength, len, bb, 0)
        .op(Op::Geom, g, 9, 0)
        .op(Op::WrapU64, g64, g, 0)
        .op(Op::LtU64, c, g64, len)
        .jump(Op::JmpIfNot, c, "end")
        .op(Op::WrapU32, v, len, 0)
        .op(Op::WrapI64, i, g, 0)
        .op(Op::DevSetU32, bb, i, v)
        .label("end")
        .op(Op::RetVoid, 0, 0, 0);
    let m = module(vec![k.finish()], vec![]);
    let b = parallel();
    let s = upload(&b, &[0u32; 20]);
    let view = KernelArg::Buffer {
        storage: s,
        offset: 5,
        len: 10,
    };
    launch(&b, &m, 0, dims([4, 1, 1], [4, 1, 1]), &[view]).unwrap();
    let mut want = vec![0u32; 20];
    want[5..15].fill(10);
    assert_eq!(download::<u32>(&b, s, 20), want);
    // A view past the end of its storage is refused.
    let bad = KernelArg::Buffer {
        storage: s,
        offset: 15,
        len: 10,
    };
    let err = launch(&b, &m, 0, dims([1, 1, 1], [1, 1, 1]), &[bad]).unwrap_err();
    assert!(matches!(err, LaunchError::Refused(e) if e.code == "XPU-E-LAUNCH"));
}

#[test]
fn launch_validation() {
    let m = module(vec![saxpy(true)], vec![]);
    let b = serial();
    let (args, y, _) = saxpy_args(&b, 16, 1.0);
    let refused = |grid, block, shared| match launch(
        &b,
        &m,
        0,
        cajeta_backends::Dims {
            grid,
            block,
            shared_bytes: shared,
        },
        &args,
    ) {
        Err(LaunchError::Refused(e)) => {
            assert_eq!(e.code, "XPU-E-LAUNCH");
            e.message
        }
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert_eq!(
        refused([1, 1, 1], [64, 32, 1], 0),
        "kernel saxpy refused by backend cpu: block of 2048 items exceeds the limit 1024"
    );
    assert_eq!(
        refused([1, 1, 1], [1, 1, 65], 0),
        "kernel saxpy refused by backend cpu: block dimension z of 65 exceeds the limit 64"
    );
    assert_eq!(
        refused([1 << 31, 1, 1], [1, 1, 1], 0),
        "kernel saxpy refused by backend cpu: grid dimension x of 2147483648 exceeds the limit 2147483647"
    );
    assert!(refused([1, 1, 1], [1, 1, 1], (16 << 20) + 1).contains("exceed the limit 16777216"));
    // Wrong argument kinds and counts.
    let mut swapped = args.clone();
    swapped.swap(0, 1);
    assert!(matches!(
        launch(&b, &m, 0, dims([1, 1, 1], [1, 1, 1]), &swapped),
        Err(LaunchError::Refused(_))
    ));
    assert!(matches!(
        launch(&b, &m, 0, dims([1, 1, 1], [1, 1, 1]), &args[..3]),
        Err(LaunchError::Refused(_))
    ));
    // Zero dimensions: valid, nothing runs.
    let before: Vec<f32> = download(&b, y, 16);
    launch(&b, &m, 0, dims([0, 1, 1], [16, 1, 1]), &args).unwrap();
    launch(&b, &m, 0, dims([1, 1, 1], [16, 0, 1]), &args).unwrap();
    assert_eq!(download::<f32>(&b, y, 16), before);
    // A released storage is a freed buffer.
    b.release(y);
    match launch(&b, &m, 0, dims([1, 1, 1], [16, 1, 1]), &args) {
        Err(LaunchError::Refused(e)) => assert_eq!(e.code, "XPU-E-FREED"),
        other => panic!("expected XPU-E-FREED, got {other:?}"),
    }
    // Not a kernel.
    let m2 = module(calls(), vec![]);
    assert!(matches!(
        launch(&b, &m2, 1, dims([1, 1, 1], [1, 1, 1]), &[]),
        Err(LaunchError::Refused(_))
    ));
}

#[test]
fn accounting_and_poison() {
    let b = serial();
    let a = b.alloc(100, MemoryKind::Device, false).unwrap();
    let p = b.alloc(13, MemoryKind::Pinned, true).unwrap();
    let z = b.alloc(0, MemoryKind::Unified, false).unwrap();
    let st = b.mem_stats();
    assert_eq!((st.live, st.peak, st.allocs, st.frees), (113, 113, 3, 0));
    let mut bytes = vec![1u8; 100];
    b.read(a, 0, &mut bytes);
    assert!(bytes.iter().all(|&x| x == 0), "zero-filled");
    let mut bytes = vec![0u8; 13];
    b.read(p, 0, &mut bytes);
    assert!(bytes.iter().all(|&x| x == 0xFF), "poisoned");
    assert!(b.host_accessible(a));
    b.release(a);
    b.release(p);
    b.release(z);
    b.release(z); // unknown by now: nothing happens
    let st = b.mem_stats();
    assert_eq!((st.live, st.peak, st.allocs, st.frees), (0, 113, 3, 3));
    let err = b.alloc(u64::MAX, MemoryKind::Device, false).unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            "XPU-E-OOM",
            "cannot allocate 18446744073709551615 bytes of Device memory on backend cpu"
        )
    );
    assert_eq!(b.mem_stats().allocs, 3);
}

#[test]
fn launches_leave_no_memory_behind() {
    let b = parallel();
    let (got, want) = run_reduction(&b, 5);
    assert_eq!(got, want);
    let st = b.mem_stats();
    assert_eq!(st.allocs, 2);
    // The test helper never released its storages: do it by id order (1 and 2).
    b.release(cajeta_backends::StorageId(1));
    b.release(cajeta_backends::StorageId(2));
    assert_eq!(b.mem_stats().live, 0);
}

#[test]
fn serial_and_parallel_agree_on_race_free_kernels() {
    let m = module(vec![saxpy(true)], vec![]);
    let (s, p) = (serial(), parallel());
    let n = 100_003;
    let grid = [(n as u32).div_ceil(128), 1, 1];
    let mut outs = vec![];
    for b in [&s, &p] {
        let (args, y, _) = saxpy_args(b, n, -0.75);
        launch(b, &m, 0, dims(grid, [128, 1, 1]), &args).unwrap();
        outs.push(
            download::<f32>(b, y, n)
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(outs[0], outs[1]);
    assert_eq!(run_reduction(&s, 50), run_reduction(&p, 50));
    assert_eq!(
        run_geometry(&s, [5, 2, 3], [4, 3, 2]),
        run_geometry(&p, [5, 2, 3], [4, 3, 2])
    );
}

#[test]
fn launches_from_several_host_threads_share_the_worker_pool() {
    // Four host threads launch on one 4-worker backend at once: one launch at a time uses the
    // pool, the others run on their own thread; results and the reported fault are the same.
    let m = module(vec![saxpy(true), saxpy(false)], vec![]);
    let b = parallel();
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let (b, m) = (&b, &m);
            s.spawn(move || {
                for round in 0..25u32 {
                    let n = 1000 + (t * 25 + round) as usize;
                    let a = 0.5 + t as f32;
                    let (args, y, want) = saxpy_args(b, n, a);
                    let grid = [(n as u32).div_ceil(64), 1, 1];
                    launch(b, m, 0, dims(grid, [64, 1, 1]), &args).unwrap();
                    let got = download::<f32>(b, y, n);
                    assert!(got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits()));
                    // Without the guard, two workgroups more than needed: the first item
                    // past the end faults, in the lowest faulting workgroup.
                    let grid = [n as u32 / 64 + 2, 1, 1];
                    let err = launch(b, m, 1, dims(grid, [64, 1, 1]), &args).unwrap_err();
                    let LaunchError::Fault(f) = err else {
                        panic!("expected a fault, got {err:?}")
                    };
                    assert_eq!(
                        f.message,
                        format!(
                            "kernel saxpy: index {n} out of bounds for length {n} (buffer x, workgroup ({},0,0), item ({},0,0))",
                            n / 64,
                            n % 64
                        )
                    );
                }
            });
        }
    });
}

#[test]
fn racing_plain_stores_are_safe_and_keep_one_value() {
    // Every item of every workgroup stores its global id into out[0], unsynchronised.
    let mut k = Asm::kernel("demo.R.race");
    let out = k.param("out", buf(Scalar::U32));
    let g = k.reg(U32);
    let z = k.reg(I64);
    k.op(Op::Geom, g, 9, 0)
        .loadi(z, 0)
        .op(Op::DevSetU32, out, z, g)
        .op(Op::RetVoid, 0, 0, 0);
    let m = module(vec![k.finish()], vec![]);
    let b = parallel();
    let out = upload(&b, &[u32::MAX]);
    launch(&b, &m, 0, dims([64, 1, 1], [64, 1, 1]), &[arg(out, 1)]).unwrap();
    let v = download::<u32>(&b, out, 1)[0];
    assert!(v < 64 * 64, "one of the stored ids, got {v}");
    // Serial: the last item to run (the highest id) wins.
    let b = serial();
    let out = upload(&b, &[u32::MAX]);
    launch(&b, &m, 0, dims([64, 1, 1], [64, 1, 1]), &[arg(out, 1)]).unwrap();
    assert_eq!(download::<u32>(&b, out, 1)[0], 64 * 64 - 1);
}

#[test]
fn each_item_gets_a_fresh_copy_of_the_parameters() {
    // p = p + g; out[g] = p: a parameter written by one item must not leak into the next.
    let mut k = Asm::kernel("demo.P.bump");
    let out = k.param("out", buf(Scalar::U32));
    let p = k.param("p", U32);
    let g = k.reg(U32);
    let i = k.reg(I64);
    k.op(Op::Geom, g, 9, 0)
        .op(Op::AddU32, p, p, g)
        .op(Op::WrapI64, i, g, 0)
        .op(Op::DevSetU32, out, i, p)
        .op(Op::RetVoid, 0, 0, 0);
    let m = module(vec![k.finish()], vec![]);
    for b in [serial(), parallel()] {
        let out = upload(&b, &[0u32; 32]);
        launch(
            &b,
            &m,
            0,
            dims([4, 1, 1], [8, 1, 1]),
            &[arg(out, 32), KernelArg::Scalar(100)],
        )
        .unwrap();
        assert_eq!(download::<u32>(&b, out, 32), (100..132).collect::<Vec<_>>());
    }
}

#[test]
fn streams_are_trivial() {
    let b = serial();
    let s1 = b.stream_create();
    let s2 = b.stream_create();
    assert_ne!(s1, s2);
    assert_ne!(s1, cajeta_backends::StreamId::DEFAULT);
    assert_eq!(b.stream_sync(s1), Ok(()));
    b.stream_destroy(s1);
    let caps = b.capabilities();
    assert_eq!(
        (caps.name, caps.wave_width, caps.max_items),
        ("cpu", 8, 1024)
    );
    assert_eq!(caps.max_block, [1024, 1024, 64]);
    assert_eq!(caps.max_shared_bytes, 16 << 20);
}

/// Best of three wall-clock times of a launch, in seconds.
fn time_launch(b: &CpuBackend, m: &Arc<Module>, grid: u32, args: &[KernelArg]) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t = std::time::Instant::now();
        launch(b, m, 0, dims([grid, 1, 1], [256, 1, 1]), args).unwrap();
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

/// Times a 2^24-element saxpy launch and the per-item cost of an empty kernel (run with
/// `cargo test --release -p cajeta-backends --test cpu -- --ignored --nocapture`).
#[test]
#[ignore]
fn saxpy_2_pow_24_timing() {
    // `CAJETA_BENCH_LOG2N` shrinks the launch (e.g. for instruction counts under valgrind).
    let log2n = std::env::var("CAJETA_BENCH_LOG2N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24);
    let n = 1usize << log2n;
    let grid = (n / 256) as u32;
    let saxpy_m: Arc<Module> = module(vec![saxpy(true)], vec![]);
    let mut empty = Asm::kernel("demo.E.empty");
    empty.param("a", F32);
    empty.op(Op::RetVoid, 0, 0, 0);
    let empty_m = module(vec![empty.finish()], vec![]);
    let configs = [
        ("one worker per core", CpuConfig::default()),
        (
            "serial",
            CpuConfig {
                workers: 1,
                serial: true,
            },
        ),
    ];
    for (label, config) in configs {
        let b = CpuBackend::with_config(config);
        let (args, y, _) = saxpy_args(&b, n, 2.0);
        let dt = time_launch(&b, &saxpy_m, grid, &args);
        println!(
            "saxpy 2^24, {label} ({} workers): {:.1} ms, {:.1} ns per item",
            b.workers(),
            dt * 1e3,
            dt * 1e9 / n as f64
        );
        // Three launches of y = 2x + y from the original y.
        let xs: Vec<f32> = (0..n).map(|i| (i as f32) * 0.5 - 3.0).collect();
        let got: Vec<f32> = download(&b, y, n);
        let want = |i: usize| {
            let mut y = 1.0 / (i as f32 + 1.0);
            for _ in 0..3 {
                y += 2.0 * xs[i];
            }
            y
        };
        assert!((0..n).step_by(4099).all(|i| got[i] == want(i)));
        let dt = time_launch(&b, &empty_m, grid, &[KernelArg::Scalar(0)]);
        println!(
            "empty kernel 2^24, {label}: {:.1} ns per item",
            dt * 1e9 / n as f64
        );
    }
}

/// `fill(out)`: `out[l] = l` with `l` the linear item index, after a `barrier` if `rendezvous`
/// is `Barrier`, after `wave.sum.u32` if it is that.
fn fill_linear(rendezvous: Option<Op>) -> Function {
    let mut k = Asm::kernel("demo.F.fill");
    let out = k.param("out", buf(Scalar::I32));
    let (tx, ty, bx, l, li, r) = (
        k.reg(U32),
        k.reg(U32),
        k.reg(U32),
        k.reg(U32),
        k.reg(I32),
        k.reg(U32),
    );
    let idx = k.reg(I64);
    k.op(Op::Geom, tx, 0, 0)
        .op(Op::Geom, ty, 1, 0)
        .op(Op::Geom, bx, 6, 0)
        .op(Op::MulU32, l, ty, bx)
        .op(Op::AddU32, l, l, tx);
    match rendezvous {
        Some(Op::Barrier) => {
            k.op(Op::Barrier, 0, 0, 0);
        }
        Some(op) => {
            k.op(op, r, l, 0);
        }
        None => {}
    }
    k.op(Op::WrapI32, li, l, 0)
        .op(Op::WrapI64, idx, l, 0)
        .op(Op::DevSetI32, out, idx, li)
        .op(Op::RetVoid, 0, 0, 0);
    k.finish()
}

#[test]
fn the_first_out_of_bounds_item_in_execution_order_is_reported() {
    // 16 items store out[l] into 10 elements: items 10..15 all fault, item 10 runs first
    // (XPU §5.5, §7.3) with or without rendezvous, in a 1-D or a 4 × 4 block.
    for rendezvous in [None, Some(Op::Barrier), Some(Op::WaveSumU32)] {
        let m = module(vec![fill_linear(rendezvous)], vec![]);
        for (block, item) in [([16, 1, 1], "(10,0,0)"), ([4, 4, 1], "(2,2,0)")] {
            for b in [serial(), parallel()] {
                let out = upload(&b, &[-1i32; 10]);
                let err = launch(&b, &m, 0, dims([1, 1, 1], block), &[arg(out, 10)]).unwrap_err();
                let LaunchError::Fault(f) = err else {
                    panic!("expected a fault, got {err:?}")
                };
                assert_eq!(
                    f.message,
                    format!(
                        "kernel fill: index 10 out of bounds for length 10 (buffer out, workgroup (0,0,0), item {item})"
                    ),
                    "{rendezvous:?}"
                );
                // Items 0..9 ran before the fault.
                assert_eq!(download::<i32>(&b, out, 10), (0..10).collect::<Vec<_>>());
            }
        }
    }
}

#[test]
fn large_allocations_are_zeroed_or_poisoned_without_a_fill_pass() {
    // 1000 × 64 MiB, one at a time: zeroed memory comes from the allocator (fresh pages), so
    // this takes milliseconds even in a debug build (a fill pass took ~0.2 s per allocation).
    let b = serial();
    const BYTES: u64 = 64 << 20;
    for i in 0..1000u64 {
        let id = b.alloc(BYTES, MemoryKind::Device, false).unwrap();
        if i % 250 == 0 {
            for at in [0, BYTES / 2 + 3, BYTES - 8] {
                let mut w = [0xAAu8; 8];
                b.read(id, at, &mut w);
                assert_eq!(w, [0; 8], "byte {at}");
            }
        }
        b.release(id);
    }
    let st = b.mem_stats();
    assert_eq!(
        (st.live, st.peak, st.allocs, st.frees),
        (0, BYTES, 1000, 1000)
    );
    let id = b.alloc(BYTES + 3, MemoryKind::Device, true).unwrap();
    for at in [0, BYTES / 2, BYTES - 5] {
        let mut w = [0u8; 8];
        b.read(id, at, &mut w);
        assert_eq!(w, [0xFF; 8], "byte {at}");
    }
    b.release(id);
}
