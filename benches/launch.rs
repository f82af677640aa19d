//! Launch overhead on the CPU backend (issue #5): one empty-kernel launch plus `sync()`, driven
//! through the whole VM (interpreted host code, launch validation, the workgroups over the
//! backend's persistent worker threads), for 1 workgroup of 1 item (run on the calling thread)
//! and for 64 workgroups of 256 items (every worker takes part).
//!
//! Run with `cargo bench --bench launch`: the kernel runs compiled; with `CAJETA_XPU_SIM=1` on
//! the lane scheduler's interpreter (the backend reads it when the VM creates it).

use cajeta_compiler::driver::compile_sources;
use criterion::{criterion_group, criterion_main, Criterion};
use std::sync::Arc;

const SOURCE: &str = r#"
import cajeta.xpu.KernelBuffer;
import cajeta.xpu.KernelStream;

public class Launch {
    @Kernel
    static void empty(KernelBuffer<int32> b) { }

    // `times` launches of `groups` x `items`, each followed by sync().
    static void go(int32 times, uint32 groups, uint32 items) {
        KernelBuffer<int32> b = heap KernelBuffer<int32>(1);
        KernelStream s = KernelStream.current();
        for (int32 i = 0; i < times; i = i + 1) {
            empty.launch(s, grid: [groups], block: [items])(b);
            s.sync();
        }
    }
}
"#;

fn bench(c: &mut Criterion) {
    let compiled = compile_sources(vec![("Launch.cajeta".into(), SOURCE.as_bytes().to_vec())]);
    let module = Arc::new(compiled.module.expect("the benchmark program compiles"));
    cajeta_bytecode::verify(&module).expect("verified");
    let go = module.function_by_name("Launch.go").expect("Launch.go");
    let mut vm = cajeta_vm::Vm::new(module.clone());
    vm.set_backend_choice(Some("cpu".into()));
    vm.run_static_init().expect("static init");
    let mut group = c.benchmark_group("launch+sync, empty kernel, cpu");
    for (name, groups, items) in [("1x1", 1u32, 1u32), ("64x256", 64, 256)] {
        group.bench_function(name, |bch| {
            bch.iter(|| {
                vm.call_index(
                    go,
                    &[
                        cajeta_vm::Value::I32(1),
                        cajeta_vm::Value::U32(groups),
                        cajeta_vm::Value::U32(items),
                    ],
                )
                .expect("launch")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
