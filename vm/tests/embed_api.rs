//! The embedding API end to end, from Cajeta source: `Engine`/`Module`/`Vm::instantiate`,
//! typed and dynamic calls by name with their conversions, buffers made and read from Rust
//! around a kernel launch, host functions, and every misuse as a clean error (no panic).

use std::sync::Arc;

use cajeta_backends::cpu::CpuBackend;
use cajeta_backends::Backend;
use cajeta_vm::{Config, Engine, HostError, JitMode, Module, Value, Vm};

const SOURCE: &str = r#"
package demo;

import cajeta.xpu.KernelBuffer;
import cajeta.xpu.KernelStream;
import cajeta.xpu.KernelThread;

public class Api {
    static int32 base = 100;
    static native float32 factor();
    static native int32 check(int32 x);

    static int32 add(int32 a, int32 b) { return a + b; }
    static uint64 wide(uint8 a, int16 b, uint64 c, boolean neg) {
        uint64 s = (uint64) a + (uint64) b + c;
        if (neg) { return 0; }
        return s;
    }
    static String greet(String who) { return "hello, " + who; }
    static String nothing() { return null; }
    static float64 sum(float64[] xs) {
        float64 s = 0.0;
        for (int64 i = 0; i < xs.count(); i = i + 1) { s = s + xs[i]; }
        return s;
    }
    static void doubleAll(int32[] xs) {
        for (int64 i = 0; i < xs.count(); i = i + 1) { xs[i] = 2 * xs[i]; }
    }
    static int32[] range(int32 n) {
        int32[] r = heap int32[n];
        for (int32 i = 0; i < n; i = i + 1) { r[i] = base + i; }
        return r;
    }
    static int32 checked(int32 x) { return check(x) + 1; }

    @Kernel
    static void scale(KernelBuffer<float32> y, float32 a, uint32 n) {
        uint32 i = KernelThread.globalIdX();
        if (i < n) { y[i] = a * y[i]; }
    }

    static void scaleAll(KernelBuffer<float32> y) {
        uint32 n = (uint32) y.length();
        KernelStream s = KernelStream.current();
        scale.launch(s, grid: [(n + 63) / 64], block: [64])(y, factor(), n);
        s.sync();
    }
}
"#;

fn setup(jit: JitMode) -> (Engine, Module) {
    let engine = Engine::new(Config::new().jit(jit).backend("cpu")).unwrap();
    let module = Module::from_source(&engine, "Api.cajeta", SOURCE).unwrap();
    (engine, module)
}

#[test]
fn engine_and_module_are_send_and_sync() {
    fn shared<T: Send + Sync + Clone + 'static>() {}
    shared::<Engine>();
    shared::<Module>();
    shared::<cajeta_vm::InterruptHandle>();
    // One module, one VM per thread.
    let (engine, module) = setup(JitMode::Auto);
    let threads: Vec<_> = (0..3)
        .map(|k| {
            let (engine, module) = (engine.clone(), module.clone());
            std::thread::spawn(move || {
                let mut vm = Vm::instantiate(&engine, &module);
                vm.call::<(i32, i32), i32>("demo.Api.add", (k, 1)).unwrap()
            })
        })
        .collect();
    let got: Vec<i32> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(got, vec![1, 2, 3]);
}

#[test]
fn typed_calls_convert_primitives_strings_and_arrays() {
    for mode in [JitMode::Off, JitMode::Eager] {
        let (engine, module) = setup(mode);
        let mut vm = Vm::instantiate(&engine, &module);
        assert_eq!(
            vm.call::<(i32, i32), i32>("demo.Api.add", (40, 2)).unwrap(),
            42
        );
        assert_eq!(
            vm.call::<(u8, i16, u64, bool), u64>("demo.Api.wide", (200, -5, 1 << 40, false))
                .unwrap(),
            (1 << 40) + 195
        );
        assert_eq!(
            vm.call::<String, String>("demo.Api.greet", "world".to_string())
                .unwrap(),
            "hello, world"
        );
        assert_eq!(
            vm.call::<(), Option<String>>("demo.Api.nothing", ())
                .unwrap(),
            None
        );
        let null = vm.call::<(), String>("demo.Api.nothing", ()).unwrap_err();
        assert_eq!(null.code, "E-NULL");

        let before = vm.heap_stats().live_objects;
        assert_eq!(
            vm.call::<Vec<f64>, f64>("demo.Api.sum", vec![0.5, 1.5, 3.0])
                .unwrap(),
            5.0
        );
        let mut xs = [1, -2, 30];
        vm.call::<&mut [i32], ()>("demo.Api.doubleAll", &mut xs[..])
            .unwrap();
        assert_eq!(xs, [2, -4, 60], "a &mut [T] argument is copied back");
        // The owned result is copied out and released; static init ran (base = 100).
        assert_eq!(
            vm.call::<i32, Vec<i32>>("demo.Api.range", 3).unwrap(),
            vec![100, 101, 102]
        );
        assert_eq!(
            vm.heap_stats().live_objects,
            before,
            "argument arrays and owned results are released ({mode})"
        );
        let dynamic = vm
            .call_dynamic("demo.Api.add", &[Value::I32(1), Value::I32(2)])
            .unwrap();
        assert_eq!(dynamic, Some(Value::I32(3)));
        let f = vm.typed_func::<(i32, i32), i32>("demo.Api.add").unwrap();
        assert_eq!(f.call(&mut vm, (5, 6)).unwrap(), 11);
    }
}

#[test]
fn misuse_is_a_clean_error() {
    let (engine, module) = setup(JitMode::Auto);
    let mut vm = Vm::instantiate(&engine, &module);
    let missing = vm.call::<(), ()>("demo.Api.nope", ()).unwrap_err();
    assert_eq!(
        (missing.code, missing.message.as_str()),
        ("E-CALL", "no function named demo.Api.nope")
    );
    let count = vm.call::<i32, i32>("demo.Api.add", 1).unwrap_err();
    assert_eq!(count.code, "E-CALL");
    assert_eq!(count.message, "demo.Api.add takes 2 arguments, got 1");
    let ty = vm
        .call::<(i32, f32), i32>("demo.Api.add", (1, 2.0))
        .unwrap_err();
    assert_eq!(
        ty.message,
        "demo.Api.add argument 2: expected int32, got f32"
    );
    let ret = vm
        .call::<(i32, i32), i64>("demo.Api.add", (1, 2))
        .unwrap_err();
    assert_eq!(ret.message, "demo.Api.add returns int32, not i64");
    let kernel = vm.call::<(), ()>("demo.Api.scale", ()).unwrap_err();
    assert_eq!(kernel.code, "E-CALL");
    let dynamic = vm
        .call_dynamic("demo.Api.add", &[Value::I32(1), Value::I64(2)])
        .unwrap_err();
    assert_eq!(dynamic.code, "E-CALL");
    assert_eq!(dynamic.message, "argument 2: expected int32, got I64(2)");
    let arity = vm.call_dynamic("demo.Api.add", &[]).unwrap_err();
    assert_eq!(arity.message, "demo.Api.add takes 2 arguments, got 0");
    // The VM is still fine.
    assert_eq!(
        vm.call::<(i32, i32), i32>("demo.Api.add", (2, 2)).unwrap(),
        4
    );

    let bad = Module::from_source(
        &engine,
        "Bad.cajeta",
        "class Bad { int32 f() { return x; } }",
    )
    .unwrap_err();
    assert_eq!(bad.code, "E-COMPILE");
    assert!(bad.message.contains("Bad.cajeta:1:"), "{}", bad.message);
    assert!(bad
        .to_string()
        .starts_with("cajeta: error: E-COMPILE: Bad.cajeta does not compile"));
    let cjb = Module::from_cjb(&engine, &[0xca, 0xfe]).unwrap_err();
    assert_eq!(cjb.code, "E-VERIFY");
    assert!(cjb.message.starts_with("CJB-E-"), "{}", cjb.message);
    assert!(!cjb.message.contains("cajeta: error"), "{}", cjb.message);
    let file = Module::from_file(&engine, "/nonexistent/x.cajeta").unwrap_err();
    assert_eq!(file.code, "E-CALL");
    let unknown = Engine::new(Config::new().backend("tpu")).unwrap_err();
    assert_eq!(unknown.code, "XPU-E-BACKEND");
}

#[test]
fn modules_load_from_files_and_cjb() {
    let dir = std::env::temp_dir().join(format!("cajeta-embed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("Api.cajeta");
    std::fs::write(&src, SOURCE).unwrap();
    let (engine, module) = setup(JitMode::Off);
    let from_file = Module::from_file(&engine, &src).unwrap();
    let cjb = dir.join("Api.cjb");
    std::fs::write(&cjb, cajeta_bytecode::encode(module.bytecode())).unwrap();
    let from_cjb = Module::from_file(&engine, &cjb).unwrap();
    for m in [from_file, from_cjb] {
        let mut vm = Vm::instantiate(&engine, &m);
        assert_eq!(
            vm.call::<(i32, i32), i32>("demo.Api.add", (3, 4)).unwrap(),
            7
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn host_function_errors_carry_the_trace() {
    for mode in [JitMode::Off, JitMode::Eager] {
        let (engine, module) = setup(mode);
        let mut vm = Vm::instantiate(&engine, &module);
        vm.define_native("demo.Api.check", |x: i32| -> Result<i32, HostError> {
            if x < 0 {
                Err(HostError::new("negative input"))
            } else {
                Ok(x)
            }
        })
        .unwrap();
        assert_eq!(vm.call::<i32, i32>("demo.Api.checked", 4).unwrap(), 5);
        let e = vm.call::<i32, i32>("demo.Api.checked", -1).unwrap_err();
        assert_eq!(e.code, "E-NATIVE");
        assert_eq!(
            e.message,
            "native method demo.Api.check failed: negative input"
        );
        let frames: Vec<&str> = e.trace.iter().map(|f| f.function.as_str()).collect();
        assert_eq!(frames, ["demo.Api.check", "demo.Api.checked"], "{mode}");
        assert_eq!(vm.call::<i32, i32>("demo.Api.checked", 9).unwrap(), 10);
    }
}

#[test]
fn buffers_cross_the_boundary_around_a_kernel_launch() {
    let cpu: Arc<dyn Backend> = Arc::new(CpuBackend::new());
    for mode in [JitMode::Off, JitMode::Eager] {
        let (engine, module) = setup(mode);
        let mut vm = Vm::instantiate(&engine, &module);
        vm.set_backend(Arc::clone(&cpu)).unwrap();
        vm.define_native("demo.Api.factor", || 3.0f32).unwrap();
        let data: Vec<f32> = (0..100).map(|i| i as f32).collect();
        let buf = vm.buffer_from_slice(&data).unwrap();
        assert_eq!(vm.memory_usage().device, 400);
        vm.call::<&_, ()>("demo.Api.scaleAll", &buf).unwrap();
        let got = vm.read_buffer(&buf).unwrap();
        let want: Vec<f32> = data.iter().map(|x| 3.0 * x).collect();
        assert_eq!(got, want, "{mode}");
        // The callee only borrowed it: the handle still works.
        vm.write_buffer(&buf, &vec![1.0; 100]).unwrap();
        vm.call::<&_, ()>("demo.Api.scaleAll", &buf).unwrap();
        assert_eq!(vm.read_buffer(&buf).unwrap(), vec![3.0; 100]);
        let short = vm.write_buffer(&buf, &[1.0]).unwrap_err();
        assert_eq!(short.code, "XPU-E-LENGTH");
        let zeros = vm.buffer_zeroed::<f32>(16).unwrap();
        assert_eq!(vm.read_buffer(&zeros).unwrap(), vec![0.0; 16]);
        vm.release_buffer(buf);
        assert_eq!(cpu.mem_stats().live, 64, "released at once");
        // A handle of another VM is refused.
        let mut other = Vm::instantiate(&engine, &module);
        let e = other.read_buffer(&zeros).unwrap_err();
        assert_eq!(e.code, "XPU-E-FREED");
        drop(other);
        let _ = zeros;
        assert_eq!(
            cpu.mem_stats().live,
            64,
            "a dropped handle leaves the buffer to the VM"
        );
        drop(vm);
        assert_eq!(
            cpu.mem_stats().live,
            0,
            "the VM releases everything when dropped"
        );
    }
}

#[test]
fn static_initialisers_run_before_the_first_call() {
    let (engine, module) = setup(JitMode::Off);
    let mut vm = Vm::instantiate(&engine, &module);
    assert_eq!(
        vm.static_value("demo.Api.base").map(|(_, v)| v),
        Some(Value::I32(0))
    );
    assert_eq!(
        vm.call::<i32, Vec<i32>>("demo.Api.range", 1).unwrap(),
        vec![100]
    );
    assert_eq!(
        vm.static_value("demo.Api.base").map(|(_, v)| v),
        Some(Value::I32(100))
    );
}
