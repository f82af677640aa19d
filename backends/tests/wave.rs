//! Wave collectives and wave geometry on the `cpu` backend (XPU §2.7, §5.2, §5.3, §8.2):
//! `Wave.width()`/`laneId()`, `reduceSum` and the float32 butterfly over full and partial
//! waves, lanes that returned, divergence, and the lowest-runnable-first schedule.

mod common;

use cajeta_backends::cpu::{CpuBackend, CpuConfig};
use cajeta_backends::{Backend, KernelArg, LaunchError};
use cajeta_bytecode::{Function, Op, Scalar};
use common::*;

/// The `cpu` wave width (XPU §8.2).
const W: usize = 8;

fn backends() -> [CpuBackend; 2] {
    [
        CpuBackend::with_config(CpuConfig {
            workers: 1,
            serial: true,
        }),
        CpuBackend::with_config(CpuConfig {
            workers: 3,
            serial: false,
        }),
    ]
}

/// Emits `l = tx + ty·bx + tz·bx·by` and `idx = Workgroup.x() · (bx·by·bz) + l` (as int64);
/// returns the two registers.
fn prologue(k: &mut Asm) -> (u16, u16) {
    let l = k.local("l", U32);
    let idx = k.local("idx", I64);
    let [tx, ty, tz, bx, by, bz, wx, n] = [(); 8].map(|_| k.reg(U32));
    k.op(Op::Geom, tx, 0, 0)
        .op(Op::Geom, ty, 1, 0)
        .op(Op::Geom, tz, 2, 0)
        .op(Op::Geom, bx, 6, 0)
        .op(Op::Geom, by, 7, 0)
        .op(Op::Geom, bz, 8, 0)
        .op(Op::Geom, wx, 3, 0)
        .op(Op::MulU32, l, tz, by)
        .op(Op::AddU32, l, l, ty)
        .op(Op::MulU32, l, l, bx)
        .op(Op::AddU32, l, l, tx)
        .op(Op::MulU32, n, bx, by)
        .op(Op::MulU32, n, n, bz)
        .op(Op::MulU32, n, n, wx)
        .op(Op::AddU32, n, n, l)
        .op(Op::WrapI64, idx, n, 0);
    (l, idx)
}

/// `sum(in, out)`: `out[idx] = <op>(in[idx])` for `op` = `wave.sum.u32` or `wave.sum.f32`;
/// items with `l % skip == 0` return first when `skip` is given.
fn sum_kernel(float: bool, skip: Option<i32>) -> Function {
    let (s, t) = if float {
        (Scalar::F32, F32)
    } else {
        (Scalar::U32, U32)
    };
    let mut k = Asm::kernel("demo.W.sum");
    let input = k.param("in", buf(s));
    let out = k.param("out", buf(s));
    let (l, idx) = prologue(&mut k);
    let v = k.reg(t);
    let r = k.reg(t);
    if let Some(m) = skip {
        let (mr, rem, zero, c) = (k.reg(U32), k.reg(U32), k.reg(U32), k.reg(BOOL));
        k.loadi(mr, m)
            .op(Op::RemU32, rem, l, mr)
            .loadi(zero, 0)
            .op(Op::EqU32, c, rem, zero)
            .jump(Op::JmpIfNot, c, "go")
            .op(Op::RetVoid, 0, 0, 0)
            .label("go");
    }
    let (get, op, set) = if float {
        (Op::DevGetF32, Op::WaveSumF32, Op::DevSetF32)
    } else {
        (Op::DevGetU32, Op::WaveSumU32, Op::DevSetU32)
    };
    k.op(get, v, input, idx)
        .op(op, r, v, 0)
        .op(set, out, idx, r)
        .op(Op::RetVoid, 0, 0, 0);
    k.finish()
}

/// Runs `kernel` (`sum_kernel`'s parameters) on `input` over `grid` workgroups of `block`;
/// returns `out` (initially `fill`).
fn run_sum<T: Elem>(
    b: &dyn Backend,
    kernel: Function,
    grid: u32,
    block: [u32; 3],
    input: &[T],
    fill: T,
) -> Vec<T> {
    let m = module(vec![kernel], vec![]);
    let n = input.len();
    let i = upload(b, input);
    let o = upload(b, &vec![fill; n]);
    launch(b, &m, 0, dims([grid, 1, 1], block), &[arg(i, n), arg(o, n)]).unwrap();
    download(b, o, n)
}

/// Deterministic pseudo-random words (a 32-bit LCG).
fn words(n: usize, seed: u32) -> Vec<u32> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            x
        })
        .collect()
}

/// The waves of a workgroup of `items` items, as ranges of linear indices.
fn waves(items: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    (0..items.div_ceil(W)).map(move |k| k * W..((k + 1) * W).min(items))
}

#[test]
fn reduce_sum_over_full_and_partial_waves() {
    // 12 items: waves of 8 and 4; 15 items (5 × 3): 8 and 7; 8 items (2 × 2 × 2): one wave;
    // 20 items: 8, 8, 4.
    for block in [[12, 1, 1], [5, 3, 1], [2, 2, 2], [20, 1, 1]] {
        let items = block.iter().product::<u32>() as usize;
        let grid = 3;
        let input = words(items * grid, items as u32);
        for b in backends() {
            let got = run_sum(
                &b,
                sum_kernel(false, None),
                grid as u32,
                block,
                &input,
                0u32,
            );
            for g in 0..grid {
                for wave in waves(items) {
                    let lanes = &input[g * items..][wave.clone()];
                    // Large random words: the sum wraps.
                    let want = lanes.iter().fold(0u32, |a, &v| a.wrapping_add(v));
                    for l in wave {
                        assert_eq!(got[g * items + l], want, "block {block:?}, wg {g}, l {l}");
                    }
                }
            }
        }
    }
}

/// The butterfly of XPU §5.3 written independently of the backend: `a` has W slots (inactive
/// lanes +0.0); for d = 1, 2, 4 each new a[j] is old a[j] + old a[j ^ d].
fn butterfly(active: &[f32]) -> [f32; W] {
    let mut a = [0.0f32; W];
    a[..active.len()].copy_from_slice(active);
    for d in [1, 2, 4] {
        a = std::array::from_fn(|j| a[j] + a[j ^ d]);
    }
    a
}

#[test]
fn reduce_sum_f32_follows_the_butterfly() {
    // Wave 0: (1e8 + 1) + (-1e8 + 1) pairs first and gives 0 ... where a left-to-right sum gives
    // a different value; wave 1 mixes magnitudes; the partial wave 2 (lanes 16..19) is all -0.0:
    // the missing lanes count +0.0, so the result is +0.0, not -0.0.
    let mut input: Vec<f32> = vec![1e8, 1.0, -1e8, 1.0, 3.0, 1e-3, -7e7, 0.25];
    input.extend(
        words(8, 7)
            .iter()
            .map(|&x| (x >> 8) as f32 * if x & 1 == 1 { 1e-6 } else { -3e2 }),
    );
    input.extend([-0.0f32; 4]);
    let items = input.len();
    for b in backends() {
        let got = run_sum(
            &b,
            sum_kernel(true, None),
            1,
            [items as u32, 1, 1],
            &input,
            f32::NAN,
        );
        let mut order_matters = false;
        for wave in waves(items) {
            let lanes = &input[wave.clone()];
            let want = butterfly(lanes);
            let sequential: f32 = lanes.iter().sum();
            order_matters |= sequential.to_bits() != want[0].to_bits();
            for (j, l) in wave.enumerate() {
                assert_eq!(got[l].to_bits(), want[j].to_bits(), "lane {l}");
            }
        }
        assert!(
            order_matters,
            "the values must tell the butterfly from a plain sum"
        );
        assert_eq!(got[16].to_bits(), 0, "missing lanes are +0.0");
    }
}

#[test]
fn lanes_that_returned_are_not_members() {
    // Items with l % 3 == 0 return before the collective. In the second wave (8..15) the last
    // lane (15) is one of them: its return completes the collective of the others.
    let items = 16;
    let input = words(items, 3);
    for b in backends() {
        for float in [false, true] {
            let k = sum_kernel(float, Some(3));
            if float {
                let fin: Vec<f32> = input.iter().map(|&x| (x >> 20) as f32 * 0.37).collect();
                let got = run_sum(&b, k, 1, [16, 1, 1], &fin, -1.0f32);
                for wave in waves(items) {
                    let lanes: Vec<f32> = wave
                        .clone()
                        .map(|l| if l % 3 == 0 { 0.0 } else { fin[l] })
                        .collect();
                    let want = butterfly(&lanes);
                    for (j, l) in wave.enumerate() {
                        let w = if l % 3 == 0 { -1.0 } else { want[j] };
                        assert_eq!(got[l].to_bits(), w.to_bits(), "lane {l}");
                    }
                }
            } else {
                let got = run_sum(&b, k, 1, [16, 1, 1], &input, 7u32);
                for wave in waves(items) {
                    let want = wave
                        .clone()
                        .filter(|l| l % 3 != 0)
                        .fold(0u32, |a, l| a.wrapping_add(input[l]));
                    for l in wave {
                        let w = if l % 3 == 0 { 7 } else { want };
                        assert_eq!(got[l], w, "lane {l}");
                    }
                }
            }
        }
    }
}

/// `geo(out)`: `out[idx] = Wave.width() * 1000 + Wave.laneId()`, after a barrier when
/// `barrier` (so both schedulers are covered).
fn lane_kernel(barrier: bool) -> Function {
    let mut k = Asm::kernel("demo.W.lanes");
    let out = k.param("out", buf(Scalar::U32));
    let (_, idx) = prologue(&mut k);
    let (w, lane, thousand, v) = (k.reg(U32), k.reg(U32), k.reg(U32), k.reg(U32));
    if barrier {
        k.op(Op::Barrier, 0, 0, 0);
    }
    k.op(Op::Geom, w, 15, 0)
        .op(Op::Geom, lane, 16, 0)
        .loadi(thousand, 1000)
        .op(Op::MulU32, v, w, thousand)
        .op(Op::AddU32, v, v, lane)
        .op(Op::DevSetU32, out, idx, v)
        .op(Op::RetVoid, 0, 0, 0);
    k.finish()
}

#[test]
fn width_and_lane_id_in_two_dimensional_blocks() {
    // 3 × 5 = 15 items: the lane id is l mod 8 with l = tx + 3·ty, restarting in each workgroup.
    for barrier in [false, true] {
        for b in backends() {
            let m = module(vec![lane_kernel(barrier)], vec![]);
            let n = 2 * 15;
            let o = upload(&b, &vec![0u32; n]);
            launch(&b, &m, 0, dims([2, 1, 1], [3, 5, 1]), &[arg(o, n)]).unwrap();
            let got: Vec<u32> = download(&b, o, n);
            let want: Vec<u32> = (0..n).map(|i| 8000 + (i % 15 % 8) as u32).collect();
            assert_eq!(got, want, "barrier: {barrier}");
        }
    }
}

/// `if (Wave.laneId() < 4) { <a> } else { <b> }` with `a`, `b` each a `barrier` or
/// `r = <collective>(1)`, then `out[idx] = r`.
fn split(a: Op, b: Op) -> Function {
    let mut k = Asm::kernel("demo.W.split");
    let out = k.param("out", buf(Scalar::U32));
    let (_, idx) = prologue(&mut k);
    let (lane, four, c, one, r) = (k.reg(U32), k.reg(U32), k.reg(BOOL), k.reg(U32), k.reg(U32));
    k.op(Op::Geom, lane, 16, 0)
        .loadi(four, 4)
        .loadi(one, 1)
        .loadi(r, 0)
        .op(Op::LtU32, c, lane, four)
        .jump(Op::JmpIfNot, c, "else");
    let operands = |op| if op == Op::Barrier { (0, 0) } else { (r, one) };
    let (x, y) = operands(a);
    k.op(a, x, y, 0).jump(Op::Jmp, 0, "end").label("else");
    let (x, y) = operands(b);
    k.op(b, x, y, 0)
        .label("end")
        .op(Op::DevSetU32, out, idx, r)
        .op(Op::RetVoid, 0, 0, 0);
    k.finish()
}

fn fault(r: Result<(), LaunchError>) -> cajeta_backends::KernelFault {
    match r {
        Err(LaunchError::Fault(f)) => f,
        other => panic!("expected a fault, got {other:?}"),
    }
}

#[test]
fn a_barrier_and_a_collective_in_one_wave_diverge() {
    // Lanes 0..3 wait at the collective; lane 4 reaches the barrier.
    let k = split(Op::WaveSumU32, Op::Barrier);
    let at = k.code.iter().rposition(|i| i.op == Op::Barrier).unwrap() as u32;
    let m = module(vec![k], vec![]);
    for b in backends() {
        let o = upload(&b, &[0u32; 16]);
        let f = fault(launch(&b, &m, 0, dims([2, 1, 1], [8, 1, 1]), &[arg(o, 16)]));
        assert_eq!(f.code, "XPU-E-DIVERGENT");
        assert_eq!(
            f.message,
            "kernel split: divergent barrier (workgroup (0,0,0), item (4,0,0))"
        );
        assert_eq!(f.frames, vec![(0, at)]);
    }
}

#[test]
fn two_collectives_in_one_wave_diverge() {
    let k = split(Op::WaveSumU32, Op::WaveSumU32);
    let at = k.code.iter().rposition(|i| i.op == Op::WaveSumU32).unwrap() as u32;
    let m = module(vec![k], vec![]);
    let b = &backends()[0];
    let o = upload(b, &[0u32; 8]);
    let f = fault(launch(b, &m, 0, dims([1, 1, 1], [8, 1, 1]), &[arg(o, 8)]));
    assert_eq!(
        (f.code, f.message.as_str(), f.frames),
        (
            "XPU-E-DIVERGENT",
            "kernel split: divergent wave collective (workgroup (0,0,0), item (4,0,0))",
            vec![(0, at)]
        )
    );
}

/// `if (l >= from) { r = reduceSum(1); } Barrier.workgroup(); out[idx] = r` (`r` starts at 0),
/// or with `ret` lanes below `from` return instead of waiting at the barrier.
fn collective_then_barrier(from: i32, ret: bool) -> Function {
    let mut k = Asm::kernel("demo.W.cb");
    let out = k.param("out", buf(Scalar::U32));
    let (l, idx) = prologue(&mut k);
    let (f, c, one, r) = (k.reg(U32), k.reg(BOOL), k.reg(U32), k.reg(U32));
    k.loadi(f, from)
        .loadi(one, 1)
        .loadi(r, 0)
        .op(Op::LtU32, c, l, f)
        .jump(Op::JmpIf, c, "low")
        .op(Op::WaveSumU32, r, one, 0)
        .jump(Op::Jmp, 0, "join")
        .label("low");
    if ret {
        k.op(Op::RetVoid, 0, 0, 0);
    }
    k.label("join")
        .op(Op::Barrier, 0, 0, 0)
        .op(Op::DevSetU32, out, idx, r)
        .op(Op::RetVoid, 0, 0, 0);
    k.finish()
}

#[test]
fn collectives_of_whole_waves_around_a_barrier_do_not_diverge() {
    for b in backends() {
        // Wave 0 waits at the barrier while wave 1 completes its collective (§5.2: each
        // collective is reached by every lane of its wave, the barrier by every item).
        let m = module(vec![collective_then_barrier(8, false)], vec![]);
        let o = upload(&b, &[9u32; 16]);
        launch(&b, &m, 0, dims([1, 1, 1], [16, 1, 1]), &[arg(o, 16)]).unwrap();
        let want: Vec<u32> = (0..16).map(|l| if l < 8 { 0 } else { 8 }).collect();
        assert_eq!(download::<u32>(&b, o, 16), want);
        // Lanes 0..4 return: the collective runs over lanes 5..7 of wave 0 and all of wave 1.
        let m = module(vec![collective_then_barrier(5, true)], vec![]);
        let o = upload(&b, &[9u32; 16]);
        launch(&b, &m, 0, dims([1, 1, 1], [16, 1, 1]), &[arg(o, 16)]).unwrap();
        let want: Vec<u32> = (0..16)
            .map(|l| match l {
                0..5 => 9,
                5..8 => 3,
                _ => 8,
            })
            .collect();
        assert_eq!(download::<u32>(&b, o, 16), want);
    }
}

/// `order(ctr, pre, post)`: `pre[idx]` and `post[idx]` are the values of an atomic counter
/// taken before and after a `wave.sum.u32` (or a barrier).
fn order_kernel(rendezvous: Op) -> Function {
    let mut k = Asm::kernel("demo.W.order");
    let ctr = k.param("ctr", buf(Scalar::U32));
    let pre = k.param("pre", buf(Scalar::U32));
    let post = k.param("post", buf(Scalar::U32));
    let (_, idx) = prologue(&mut k);
    let (t, zero, r) = (k.reg(U32), k.reg(I64), k.reg(U32));
    k.loadi(zero, 0)
        .loadi(t, 1)
        .op(Op::AtomicAddU32, t, ctr, zero)
        .op(Op::DevSetU32, pre, idx, t);
    if rendezvous == Op::Barrier {
        k.op(Op::Barrier, 0, 0, 0);
    } else {
        k.op(rendezvous, r, t, 0);
    }
    k.loadi(t, 1)
        .op(Op::AtomicAddU32, t, ctr, zero)
        .op(Op::DevSetU32, post, idx, t)
        .op(Op::RetVoid, 0, 0, 0);
    k.finish()
}

#[test]
fn a_completed_collective_resumes_its_lanes_before_later_items_start() {
    // XPU §5.5: items run in increasing l until they wait; a completed rendezvous resumes its
    // members lowest l first. Wave 0 finishes before wave 1 starts; a barrier holds all items.
    for (op, pre_post) in [
        (Op::WaveSumU32, [(0, 8), (16, 24)]),
        (Op::Barrier, [(0, 16), (8, 24)]),
    ] {
        for b in backends() {
            let m = module(vec![order_kernel(op)], vec![]);
            let ctr = upload(&b, &[0u32]);
            let pre = upload(&b, &[0u32; 16]);
            let post = upload(&b, &[0u32; 16]);
            launch(
                &b,
                &m,
                0,
                dims([1, 1, 1], [16, 1, 1]),
                &[arg(ctr, 1), arg(pre, 16), arg(post, 16)],
            )
            .unwrap();
            let mut want_pre = vec![];
            let mut want_post = vec![];
            for (p, q) in pre_post {
                want_pre.extend(p..p + 8);
                want_post.extend(q..q + 8);
            }
            assert_eq!(download::<u32>(&b, pre, 16), want_pre, "{}", op.mnemonic());
            assert_eq!(
                download::<u32>(&b, post, 16),
                want_post,
                "{}",
                op.mnemonic()
            );
        }
    }
}

#[test]
fn a_fault_after_a_collective_is_the_first_in_execution_order() {
    // out has 12 elements and a block of 16 items: items 12..15 store out of bounds after the
    // collective. Wave 0 completes and stores first, then wave 1 completes its collective and
    // resumes in increasing l: 8..11 store, 12 faults first.
    let m = module(vec![sum_kernel(false, None)], vec![]);
    for b in backends() {
        let i = upload(&b, &[1u32; 16]);
        let o = upload(&b, &[0u32; 12]);
        let f = fault(launch(
            &b,
            &m,
            0,
            dims([1, 1, 1], [16, 1, 1]),
            &[arg(i, 16), arg(o, 12)],
        ));
        assert_eq!(
            f.message,
            "kernel sum: index 12 out of bounds for length 12 (buffer out, workgroup (0,0,0), item (12,0,0))"
        );
        assert_eq!(download::<u32>(&b, o, 12), vec![8; 12]);
    }
}

#[test]
fn scalar_arguments_reach_collectives() {
    // A kernel whose collective sums a parameter: every lane gets W · p (wrapping).
    let mut k = Asm::kernel("demo.W.p");
    let out = k.param("out", buf(Scalar::U32));
    let p = k.param("p", U32);
    let (_, idx) = prologue(&mut k);
    let r = k.reg(U32);
    k.op(Op::WaveSumU32, r, p, 0)
        .op(Op::DevSetU32, out, idx, r)
        .op(Op::RetVoid, 0, 0, 0);
    let m = module(vec![k.finish()], vec![]);
    let b = &backends()[1];
    let o = upload(b, &[0u32; 64]);
    launch(
        b,
        &m,
        0,
        dims([4, 1, 1], [16, 1, 1]),
        &[arg(o, 64), KernelArg::Scalar(0x9000_0001)],
    )
    .unwrap();
    assert_eq!(
        download::<u32>(b, o, 64),
        vec![0x9000_0001u32.wrapping_mul(8); 64]
    );
}
