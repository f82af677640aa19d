//! Limits of the embedding API: fuel (counted identically by the interpreter and the JIT),
//! interruption from another thread, and the memory cap on host and device bytes. Each
//! limit is a clean runtime error after which the VM is still usable, and nothing leaks.

use std::sync::Arc;
use std::time::Duration;

use cajeta_backends::cpu::CpuBackend;
use cajeta_backends::Backend;
use cajeta_vm::{Config, Engine, JitMode, Module, Vm};

const SOURCE: &str = r#"
import cajeta.xpu.KernelBuffer;

class Work {
    static int64 leaf(int64 x) { return x + 1; }
    static int64 run(int64 n) {
        int64 s = 0;
        for (int64 i = 0; i < n; i = i + 1) {
            s = leaf(s);
            if (s % 3 == 0) { s = s + 1; }
        }
        return s;
    }
    static int64 nested(int64 n) {
        int64 t = 0;
        int64 i = 0;
        while (i < n) {
            t = t + run(i);
            i = i + 1;
        }
        return t;
    }
    static int64 fib(int64 n) {
        if (n < 2) { return n; }
        return fib(n - 1) + fib(n - 2);
    }
    static void forever() { while (true) { } }
    static int64 recurse(int64 n) { return recurse(n + 1) + 1; }
    static int64 hostArray(int64 n) {
        int64[] a = heap int64[n];
        a[0] = 7;
        return a[0];
    }
    static int64 deviceBuffer(int64 n) {
        KernelBuffer<float32> b = heap KernelBuffer<float32>(n);
        return (int64) b.length();
    }
}
"#;

fn vm(jit: JitMode) -> Vm {
    let engine = Engine::new(Config::new().jit(jit).backend("cpu")).unwrap();
    let module = Module::from_source(&engine, "Work.cajeta", SOURCE).unwrap();
    Vm::instantiate(&engine, &module)
}

const MODES: [JitMode; 3] = [JitMode::Off, JitMode::Eager, JitMode::Auto];

/// Fuel used by `name(n)` when it succeeds.
fn fuel_used(jit: JitMode, name: &str, n: i64) -> u64 {
    let mut vm = vm(jit);
    vm.run_static_init().unwrap();
    vm.set_fuel(Some(1 << 40));
    vm.call::<i64, i64>(name, n).unwrap();
    (1 << 40) - vm.fuel().unwrap()
}

#[test]
fn fuel_is_counted_the_same_by_both_tiers() {
    // (`leaf` is inlined by the compiler: `run` uses its entry and one unit per iteration;
    // `fib` is all calls.)
    for (name, n, want) in [
        ("Work.run", 50, 51),
        ("Work.nested", 12, 0),
        ("Work.fib", 15, 1973),
    ] {
        let used: Vec<u64> = MODES.iter().map(|&m| fuel_used(m, name, n)).collect();
        if want != 0 {
            assert_eq!(used[0], want, "{name}: one unit per call and per back edge");
        }
        assert_eq!(used[0], used[1], "{name}: interpreter vs eager JIT");
        assert_eq!(used[0], used[2], "{name}: interpreter vs auto JIT");
        // Exactly that much is enough, one less is not.
        for &mode in &MODES {
            let mut vm = vm(mode);
            vm.run_static_init().unwrap();
            vm.set_fuel(Some(used[0]));
            assert!(vm.call::<i64, i64>(name, n).is_ok(), "{name} {mode}");
            assert_eq!(vm.fuel(), Some(0));
            vm.set_fuel(Some(used[0] - 1));
            let e = vm.call::<i64, i64>(name, n).unwrap_err();
            assert_eq!(e.code, "E-FUEL", "{name} {mode}");
        }
    }
}

#[test]
fn fuel_stops_an_infinite_loop_and_the_vm_stays_usable() {
    for mode in MODES {
        let mut vm = vm(mode);
        vm.set_fuel(Some(10_000));
        let e = vm.call::<(), ()>("Work.forever", ()).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("E-FUEL", "fuel exhausted"),
            "{mode}"
        );
        assert_eq!(
            e.trace.first().map(|f| f.function.as_str()),
            Some("Work.forever")
        );
        assert_eq!(vm.fuel(), Some(0));
        // Refuel and go on.
        vm.set_fuel(Some(1_000_000));
        assert_eq!(vm.call::<i64, i64>("Work.run", 10).unwrap(), 14);
        // Unbounded recursion hits fuel or the depth limit, never a crash.
        vm.set_fuel(Some(5_000));
        let e = vm.call::<i64, i64>("Work.recurse", 0).unwrap_err();
        assert_eq!(e.code, "E-FUEL", "{mode}");
        vm.set_fuel(None);
        assert_eq!(vm.fuel(), None);
        assert_eq!(vm.call::<i64, i64>("Work.run", 10).unwrap(), 14);
    }
}

#[test]
fn engine_fuel_applies_to_each_vm() {
    let engine = Engine::new(Config::new().fuel(Some(100)).jit(JitMode::Eager)).unwrap();
    let module = Module::from_source(&engine, "Work.cajeta", SOURCE).unwrap();
    for _ in 0..2 {
        let mut vm = Vm::instantiate(&engine, &module);
        assert_eq!(vm.fuel(), Some(100));
        let e = vm.call::<(), ()>("Work.forever", ()).unwrap_err();
        assert_eq!(e.code, "E-FUEL");
    }
}

#[test]
fn another_thread_interrupts_a_running_call() {
    for mode in MODES {
        let mut vm = vm(mode);
        let handle = vm.interrupt_handle();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            handle.interrupt();
        });
        let e = vm.call::<(), ()>("Work.forever", ()).unwrap_err();
        stopper.join().unwrap();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("E-INTERRUPTED", "interrupted"),
            "{mode}"
        );
        // The request was consumed: the next call runs to its end.
        assert_eq!(vm.call::<i64, i64>("Work.run", 10).unwrap(), 14);
        // A request made while nothing runs stops the next call at its first check point.
        let h = vm.interrupt_handle();
        h.interrupt();
        let e = vm.call::<i64, i64>("Work.run", 10).unwrap_err();
        assert_eq!(e.code, "E-INTERRUPTED");
        assert!(!h.is_interrupted());
    }
}

#[test]
fn the_memory_limit_covers_host_arrays() {
    for mode in MODES {
        let mut vm = vm(mode);
        vm.set_memory_limit(Some(1 << 20));
        assert_eq!(vm.call::<i64, i64>("Work.hostArray", 1000).unwrap(), 7);
        let e = vm.call::<i64, i64>("Work.hostArray", 1 << 20).unwrap_err();
        assert_eq!(e.code, "E-MEMORY", "{mode}");
        assert!(
            e.message
                .starts_with("memory limit exceeded: allocating 8388608 bytes"),
            "{}",
            e.message
        );
        assert_eq!(
            e.trace.first().map(|f| f.function.as_str()),
            Some("Work.hostArray")
        );
        // A request no machine could satisfy is an unallocatable length (LANGUAGE §6.1),
        // refused before the elements are allocated.
        let e = vm.call::<i64, i64>("Work.hostArray", 1 << 60).unwrap_err();
        assert_eq!(e.code, "E-SIZE");
        assert_eq!(vm.call::<i64, i64>("Work.hostArray", 10).unwrap(), 7);
        // Host arrays made from Rust count too.
        let e = vm
            .call_dynamic("Work.hostArray", &[cajeta_vm::Value::I64(1)])
            .map(|_| ());
        assert!(e.is_ok());
        assert!(vm.memory_usage().host < 1 << 20);
    }
}

#[test]
fn the_memory_limit_covers_device_buffers() {
    let cpu: Arc<dyn Backend> = Arc::new(CpuBackend::new());
    {
        let mut vm = vm(JitMode::Off);
        vm.set_backend(Arc::clone(&cpu)).unwrap();
        vm.set_memory_limit(Some(1 << 16));
        assert_eq!(
            vm.call::<i64, i64>("Work.deviceBuffer", 1000).unwrap(),
            1000
        );
        let e = vm
            .call::<i64, i64>("Work.deviceBuffer", 1 << 16)
            .unwrap_err();
        assert_eq!(e.code, "XPU-E-OOM");
        assert!(e.message.contains("memory limit exceeded"), "{}", e.message);
        let kept = vm.buffer_zeroed::<f64>(4096).unwrap();
        assert_eq!(vm.memory_usage().device, 32768);
        let e = vm.buffer_zeroed::<f64>(5000).unwrap_err();
        assert_eq!(e.code, "XPU-E-OOM");
        // Host and device share the limit.
        let e = vm.call::<i64, i64>("Work.hostArray", 5000).unwrap_err();
        assert_eq!(e.code, "E-MEMORY");
        vm.release_buffer(kept);
        assert_eq!(vm.call::<i64, i64>("Work.hostArray", 5000).unwrap(), 7);
        assert_eq!(cpu.mem_stats().live, 0);
        let _still_held = vm.buffer_zeroed::<u8>(100).unwrap();
        assert_eq!(cpu.mem_stats().live, 100);
    }
    assert_eq!(
        cpu.mem_stats().live,
        0,
        "device live bytes back to 0 after the VM drops"
    );
}
