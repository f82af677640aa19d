//! The `cpu` backend's persistent worker pool: many consecutive launches reuse the same threads,
//! worker-cap changes apply to the next launch, fault selection stays deterministic with
//! `CAJETA_XPU_CPU_WORKERS=4`, and dropping the backend ends its threads.
//!
//! One test only: it counts the process's worker threads, which other tests running at the
//! same time in this binary would disturb (Linux; elsewhere the counts are not checked).

mod common;

use cajeta_backends::cpu::{CpuBackend, CpuConfig};
use cajeta_backends::{Backend, LaunchError};
use cajeta_bytecode::{Function, Op, Scalar};
use common::*;

/// `fill(KernelBuffer<int32> out)`: `out[i] = i` for `i = globalIdX()`, after a barrier when
/// `barrier` (so the items of a workgroup switch on the pooled threads too).
fn fill(barrier: bool) -> Function {
    let mut k = Asm::kernel("demo.P.fill");
    let out = k.param("out", buf(Scalar::I32));
    let i = k.local("i", U32);
    let v = k.reg(I32);
    let idx = k.reg(I64);
    k.op(Op::Geom, i, 9, 0);
    if barrier {
        k.op(Op::Barrier, 0, 0, 0);
    }
    k.op(Op::WrapI32, v, i, 0)
        .op(Op::WrapI64, idx, i, 0)
        .op(Op::DevSetI32, out, idx, v)
        .op(Op::RetVoid, 0, 0, 0);
    k.finish()
}

/// Threads of this process named like the pool's workers (`None` where `/proc` is missing).
fn pool_threads() -> Option<usize> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    let n = tasks
        .filter_map(Result::ok)
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                // The kernel keeps 15 bytes of a thread's name.
                .is_ok_and(|c| c.trim_end() == "cajeta-cpu-work")
        })
        .count();
    Some(n)
}

/// [`pool_threads`] once it equals `want`, or after a second: a new thread names itself only
/// once it runs, and an ended one leaves `/proc` shortly after it is joined.
fn pool_threads_settled(want: usize) -> Option<usize> {
    let mut n = pool_threads()?;
    for _ in 0..100 {
        if n == want {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        n = pool_threads()?;
    }
    Some(n)
}

#[test]
fn the_pool_is_reused_follows_the_worker_cap_and_keeps_faults_deterministic() {
    // Nothing else in this binary reads the environment.
    std::env::set_var("CAJETA_XPU_CPU_WORKERS", "4");
    std::env::remove_var("CAJETA_XPU_CPU_SERIAL");
    let before = pool_threads();
    // One worker, or one workgroup, runs on the calling thread: no thread is started.
    let m = module(vec![fill(true)], vec![]);
    let one = CpuBackend::with_config(CpuConfig {
        workers: 1,
        serial: false,
    });
    let four = CpuBackend::new();
    for (b, grid) in [(&one, 8), (&four, 1)] {
        let n = (grid * 32) as usize;
        let out = upload(b, &vec![-1i32; n]);
        launch(b, &m, 0, dims([grid, 1, 1], [32, 1, 1]), &[arg(out, n)]).unwrap();
        let got = download::<i32>(b, out, n);
        assert!(got.iter().enumerate().all(|(i, &v)| v == i as i32));
    }
    assert_eq!(pool_threads(), before);
    drop((one, four));

    let b = CpuBackend::new();
    assert_eq!(b.workers(), 4);
    const GROUPS: u32 = 64;
    const BLOCK: u32 = 32;
    let total = (GROUPS * BLOCK) as usize;
    let mut seed = 0x2545_f491u32;
    for barrier in [false, true] {
        let m = module(vec![fill(barrier)], vec![]);
        for round in 0..150 {
            // A buffer of n < total elements: every item from n on faults, in the workgroups
            // from n / BLOCK on; the first fault of the lowest one is reported, and every
            // workgroup below it ran to completion.
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let n = (seed >> 8) as usize % total;
            let out = upload(&b, &vec![-1i32; n.max(1)]);
            let res = launch(
                &b,
                &m,
                0,
                dims([GROUPS, 1, 1], [BLOCK, 1, 1]),
                &[arg(out, n)],
            );
            let Err(LaunchError::Fault(f)) = res else {
                panic!("round {round}: expected a fault, got {res:?}")
            };
            assert_eq!(
                f.message,
                format!(
                    "kernel fill: index {n} out of bounds for length {n} (buffer out, workgroup ({},0,0), item ({},0,0))",
                    n / BLOCK as usize,
                    n % BLOCK as usize
                ),
                "round {round}, barrier {barrier}"
            );
            let got = download::<i32>(&b, out, n);
            assert!(got.iter().enumerate().all(|(i, &v)| v == i as i32));
            b.release(out);
        }
    }
    // 300 launches of 4 workers: 3 threads, started once.
    if let Some(before) = before {
        assert_eq!(pool_threads_settled(before + 3), Some(before + 3));
    }

    // A higher cap starts more threads at the next launch; a lower one uses fewer and starts
    // none; results do not change.
    let m = module(vec![fill(false)], vec![]);
    for (cap, threads) in [(6, 5), (2, 5), (1, 5), (0, 5)] {
        b.set_worker_cap(cap);
        let out = upload(&b, &vec![-1i32; total]);
        launch(
            &b,
            &m,
            0,
            dims([GROUPS, 1, 1], [BLOCK, 1, 1]),
            &[arg(out, total)],
        )
        .unwrap();
        let got = download::<i32>(&b, out, total);
        assert!(
            got.iter().enumerate().all(|(i, &v)| v == i as i32),
            "cap {cap}"
        );
        b.release(out);
        if let Some(before) = before {
            // Cap 0 is one worker per core: at most the threads already there unless the
            // machine has more than 6 cores.
            if cap != 0 || b.workers() <= 6 {
                let want = before + threads;
                assert_eq!(pool_threads_settled(want), Some(want), "cap {cap}");
            }
        }
    }

    // Dropping the backend ends its threads.
    drop(b);
    if let Some(before) = before {
        assert_eq!(pool_threads_settled(before), Some(before));
    }
}
